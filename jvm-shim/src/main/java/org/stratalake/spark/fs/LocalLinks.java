package org.stratalake.spark.fs;

import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;

/**
 * The JVM's half of a rule Python's {@code LocalFileIO} keeps: table files are never read or
 * written through a symbolic link, the file's own or its directory's. A {@code bucket-7 ->
 * /elsewhere} planted by someone who may write the table would otherwise lead a reader or writer
 * with wider rights outside it. Links further up (the warehouse itself) are fine; object stores
 * have no links.
 */
public final class LocalLinks {
  private LocalLinks() {}

  /** Directory levels a table holds under its root (Paimon's layout), as Python's rule names them. */
  private static final java.util.Set<String> TABLE_LEVELS =
      java.util.Set.of("manifest", "snapshot", "changelog", "index", "tag", "schema", "statistics");

  private static boolean insideTableLevel(Path dir) {
    Path name = dir.getFileName();
    if (name == null) {
      return false;
    }
    String n = name.toString();
    return n.startsWith("bucket-") || n.contains("=") || TABLE_LEVELS.contains(n);
  }

  /**
   * Refuses {@code file} (a path or URI) when it, or a directory between it and its table (bucket,
   * partition and metadata directories), is a local symbolic link.
   */
  public static void refuseRead(String file) throws IOException {
    Path local = local(file);
    for (Path at = local; at != null; at = at.getParent()) {
      refuse(at, "read", file);
      Path parent = at.getParent();
      if (parent == null || !insideTableLevel(parent)) {
        return;
      }
    }
  }

  /** Refuses writing into {@code directory} when it is a local symbolic link. */
  public static void refuseWriteInto(String directory) throws IOException {
    Path local = local(directory);
    if (local != null) {
      refuse(local, "write", directory);
    }
  }

  private static void refuse(Path candidate, String action, String target) throws IOException {
    if (candidate != null && Files.isSymbolicLink(candidate)) {
      throw new IOException(
          candidate + " is a symbolic link; stratalake does not " + action + " table files through "
              + "links (" + action + " of " + target + ": a link inside a table could lead outside "
              + "it). Replace the link by the real file or directory");
    }
  }

  private static Path local(String pathOrUri) {
    if (pathOrUri.startsWith("/")) {
      return Paths.get(pathOrUri);
    }
    URI uri = URI.create(pathOrUri.replace(" ", "%20"));
    return "file".equals(uri.getScheme()) ? Paths.get(uri.getPath()) : null;
  }
}
