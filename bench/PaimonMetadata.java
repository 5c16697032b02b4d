import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.time.Duration;
import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.options.ExpireConfig;
import org.apache.paimon.options.Options;
import org.apache.paimon.predicate.Predicate;
import org.apache.paimon.predicate.PredicateBuilder;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.Table;
import org.apache.paimon.table.sink.BatchTableCommit;
import org.apache.paimon.table.sink.BatchTableWrite;
import org.apache.paimon.table.sink.BatchWriteBuilder;
import org.apache.paimon.table.sink.CommitMessage;
import org.apache.paimon.table.source.DataSplit;
import org.apache.paimon.table.source.Split;

/**
 * Apache Paimon's Java implementation on bench.metadata_scale's table (table "db.t" of a
 * filesystem warehouse: id BIGINT, dt STRING, v STRING, partitioned by dt), the same figures
 * the bench measures for stratalake. Prints one JSON object.
 *
 * <pre>
 * java -cp ... PaimonMetadata WAREHOUSE plan DT DT2 REPEATS   planning a query of dt = DT (first
 *                                                             in the JVM, then after one of DT2)
 * java -cp ... PaimonMetadata WAREHOUSE plan-all              planning the whole table
 * java -cp ... PaimonMetadata WAREHOUSE commit DT COMMITS     small commits of one row into DT
 * java -cp ... PaimonMetadata WAREHOUSE expire RETAIN         expiring all but RETAIN snapshots
 * </pre>
 *
 * The bench's data files are not written (its table is metadata only), so the writer runs with
 * write-only = true (no compaction, which would read them; no expiration after commit).
 */
public class PaimonMetadata {
  private static double ms(long t0) {
    return (System.nanoTime() - t0) / 1e6;
  }

  private static long statusKib(String field) throws Exception {
    for (String line : Files.readAllLines(Paths.get("/proc/self/status"))) {
      if (line.startsWith(field + ":")) {
        return Long.parseLong(line.replaceAll("[^0-9]", ""));
      }
    }
    throw new IllegalStateException(field);
  }

  private static int files(List<Split> splits) {
    int n = 0;
    for (Split s : splits) {
      n += ((DataSplit) s).dataFiles().size();
    }
    return n;
  }

  private static double median(List<Double> values) {
    List<Double> sorted = new ArrayList<>(values);
    Collections.sort(sorted);
    int n = sorted.size();
    return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
  }

  public static void main(String[] args) throws Exception {
    Options options = new Options();
    options.set("warehouse", args[0]);
    Catalog catalog = CatalogFactory.createCatalog(CatalogContext.create(options));
    Table table = catalog.getTable(Identifier.fromString("db.t"));
    String mode = args[1];
    StringBuilder out = new StringBuilder("{");
    if (mode.equals("plan")) {
      PredicateBuilder pb = new PredicateBuilder(table.rowType());
      Predicate p = pb.equal(pb.indexOf("dt"), BinaryString.fromString(args[2]));
      Predicate other = pb.equal(pb.indexOf("dt"), BinaryString.fromString(args[3]));
      long t0 = System.nanoTime();
      int files = files(table.newReadBuilder().withFilter(other).newScan().plan().splits());
      double cold = ms(t0);
      // The JVM's classes are loaded and compiled now; the first plan of dt = DT still reads its
      // manifests (Paimon caches only manifests below cache.manifest.small-file-threshold).
      t0 = System.nanoTime();
      files(table.newReadBuilder().withFilter(p).newScan().plan().splits());
      double warmJvm = ms(t0);
      List<Double> times = new ArrayList<>();
      for (int i = 0; i < Integer.parseInt(args[4]); i++) {
        t0 = System.nanoTime();
        files(table.newReadBuilder().withFilter(p).newScan().plan().splits());
        times.add(ms(t0));
      }
      out.append(String.format(Locale.ROOT,
          "\"plan_one_partition_cold_ms\": %.1f, \"plan_one_partition_warm_jvm_ms\": %.1f, "
              + "\"plan_one_partition_ms\": %.1f, \"plan_one_partition_files\": %d",
          cold, warmJvm, median(times), files));
    } else if (mode.equals("plan-all")) {
      table.newReadBuilder(); // the schema and snapshot are read before the measurement, as the bench does
      ((FileStoreTable) table).snapshotManager().latestSnapshot();
      Files.write(Paths.get("/proc/self/clear_refs"), "5".getBytes());
      long rss0 = statusKib("VmRSS");
      long t0 = System.nanoTime();
      int files = files(table.newReadBuilder().newScan().plan().splits());
      double elapsed = ms(t0);
      out.append(String.format(Locale.ROOT,
          "\"plan_table_ms\": %.1f, \"plan_table_files\": %d, \"plan_table_peak_rss_growth_mib\": %.1f",
          elapsed, files, (statusKib("VmHWM") - rss0) / 1024.0));
    } else if (mode.equals("commit")) {
      Table writeOnly = table.copy(Collections.singletonMap("write-only", "true"));
      BinaryString dt = BinaryString.fromString(args[2]);
      List<Double> commits = new ArrayList<>();
      double firstWrite = 0;
      for (int i = 0; i < Integer.parseInt(args[3]); i++) {
        BatchWriteBuilder builder = writeOnly.newBatchWriteBuilder();
        long t0 = System.nanoTime();
        List<CommitMessage> messages;
        try (BatchTableWrite write = builder.newWrite()) {
          write.write(GenericRow.of(-(long) (i + 1), dt, BinaryString.fromString("x")));
          messages = write.prepareCommit();
        }
        if (i == 0) {
          firstWrite = ms(t0);
        }
        t0 = System.nanoTime();
        try (BatchTableCommit commit = builder.newCommit()) {
          commit.commit(messages);
        }
        commits.add(ms(t0));
      }
      out.append(String.format(Locale.ROOT,
          "\"write_first_ms\": %.1f, \"commit_first_ms\": %.1f, \"commit_median_ms\": %.1f, \"commit_max_ms\": %.1f",
          firstWrite, commits.get(0), median(commits), Collections.max(commits)));
    } else if (mode.equals("expire")) {
      int retain = Integer.parseInt(args[2]);
      ExpireConfig config = ExpireConfig.builder()
          .snapshotRetainMax(retain)
          .snapshotRetainMin(1)
          .snapshotTimeRetain(Duration.ZERO)
          .snapshotMaxDeletes(Integer.MAX_VALUE)
          .build();
      long t0 = System.nanoTime();
      int expired = table.newExpireSnapshots().config(config).expire();
      out.append(String.format(Locale.ROOT, "\"expire_ms\": %.1f, \"expired\": %d", ms(t0), expired));
    } else {
      throw new IllegalArgumentException("unknown mode " + mode);
    }
    System.out.println(out.append("}"));
  }
}
