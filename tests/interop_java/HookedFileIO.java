import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.StandardCopyOption;
import org.apache.paimon.fs.FileIO;
import org.apache.paimon.fs.FileIOLoader;
import org.apache.paimon.fs.Path;
import org.apache.paimon.fs.local.LocalFileIO;

/**
 * Paimon's local FileIO for paths "hooked:///...", whose snapshot publish pauses between its two
 * steps, as a test needs to force a race: Paimon publishes a snapshot by writing a temp file and
 * renaming it onto snapshot-N after checking that snapshot-N does not exist. Here, once the check
 * passed, the publish creates STRATALAKE_HOOK_DIR/checked, waits for .../created (another writer
 * created snapshot-N meanwhile), then renames (rename(2) replaces that file) and creates
 * .../moved. Without STRATALAKE_HOOK_DIR, or after the first snapshot, it is LocalFileIO.
 */
public class HookedFileIO extends LocalFileIO {
  private static boolean fired;

  @Override
  public boolean rename(Path src, Path dst) throws IOException {
    String hook = System.getenv("STRATALAKE_HOOK_DIR");
    if (hook == null || fired || !dst.getName().startsWith("snapshot-")) {
      return super.rename(src, dst);
    }
    File target = toFile(dst);
    if (target.exists()) {
      return false;
    }
    fired = true;
    new File(hook, "checked").createNewFile();
    long deadline = System.currentTimeMillis() + 60_000;
    while (!new File(hook, "created").exists()) {
      if (System.currentTimeMillis() > deadline) {
        throw new IOException("the other writer never created the snapshot");
      }
      try {
        Thread.sleep(1);
      } catch (InterruptedException e) {
        throw new IOException(e);
      }
    }
    Files.move(toFile(src).toPath(), target.toPath(), StandardCopyOption.ATOMIC_MOVE);
    new File(hook, "moved").createNewFile();
    return true;
  }

  @Override
  public File toFile(Path path) {
    return new File(path.toUri().getPath());
  }

  /** Registered for the scheme "hooked" (META-INF/services, written by the test harness). */
  public static class Loader implements FileIOLoader {
    @Override
    public String getScheme() {
      return "hooked";
    }

    @Override
    public FileIO load(Path path) {
      return new HookedFileIO();
    }
  }
}
