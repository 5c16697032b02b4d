import java.math.BigDecimal;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import org.apache.paimon.Snapshot;
import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.data.Decimal;
import org.apache.paimon.data.Timestamp;
import org.apache.paimon.options.Options;
import org.apache.paimon.stats.ColStats;
import org.apache.paimon.stats.Statistics;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.sink.BatchTableCommit;

/**
 * Table statistics with Apache Paimon's Java implementation.
 *
 * <p>{@code read}: prints {@code table.statistics()} of the latest snapshot: a line "stats
 * snapshotId schemaId mergedRecordCount mergedRecordSize" then per column "col name colId
 * distinctCount min max nullCount avgLen maxLen" (min/max are the deserialised Java objects'
 * toString), or "none". {@code commit}: commits fixed statistics of the latest snapshot for the
 * columns i INT, d DOUBLE, f FLOAT, dec DECIMAL(10, 5), ts TIMESTAMP(3), day DATE, s STRING, as
 * an ANALYZE snapshot (TableCommit.updateStatistics).
 * Usage: java -cp ... PaimonStats WAREHOUSE db.t read|commit
 */
public class PaimonStats {
  public static void main(String[] args) throws Exception {
    Options options = new Options();
    options.set("warehouse", args[0]);
    Catalog catalog = CatalogFactory.createCatalog(CatalogContext.create(options));
    FileStoreTable table = (FileStoreTable) catalog.getTable(Identifier.fromString(args[1]));
    if (args[2].equals("read")) {
      Optional<Statistics> stats = table.statistics();
      if (!stats.isPresent()) {
        System.out.println("none");
        return;
      }
      Statistics s = stats.get();
      System.out.println(
          "stats\t" + s.snapshotId() + "\t" + s.schemaId() + "\t" + s.mergedRecordCount().getAsLong()
              + "\t" + s.mergedRecordSize().getAsLong());
      for (Map.Entry<String, ColStats<?>> e : s.colStats().entrySet()) {
        ColStats<?> c = e.getValue();
        System.out.println(
            "col\t" + e.getKey() + "\t" + c.colId() + "\t" + c.distinctCount().getAsLong() + "\t"
                + c.min().map(String::valueOf).orElse("null") + "\t"
                + c.max().map(String::valueOf).orElse("null") + "\t" + c.nullCount().getAsLong()
                + "\t" + c.avgLen().getAsLong() + "\t" + c.maxLen().getAsLong());
      }
    } else if (args[2].equals("commit")) {
      Snapshot latest = table.snapshotManager().latestSnapshot();
      Map<String, ColStats<?>> cols = new LinkedHashMap<>();
      cols.put("i", ColStats.newColStats(id(table, "i"), 2L, -7, 42, 1L, 4L, 4L));
      cols.put("d", ColStats.newColStats(id(table, "d"), 2L, 0.0001d, 2.5e10d, 0L, 8L, 8L));
      cols.put("f", ColStats.newColStats(id(table, "f"), 2L, 0.1f, 1e7f, 0L, 4L, 4L));
      cols.put(
          "dec",
          ColStats.newColStats(
              id(table, "dec"),
              2L,
              Decimal.fromBigDecimal(new BigDecimal("1.5"), 10, 5),
              Decimal.fromBigDecimal(new BigDecimal("12.12345"), 10, 5),
              0L, 8L, 8L));
      cols.put(
          "ts",
          ColStats.newColStats(
              id(table, "ts"),
              2L,
              Timestamp.fromEpochMillis(1577836800120L),
              Timestamp.fromEpochMillis(1577923200000L),
              0L, 8L, 8L));
      cols.put("day", ColStats.newColStats(id(table, "day"), 2L, 18262, 18263, 0L, 4L, 4L));
      cols.put("s", ColStats.newColStats(id(table, "s"), 3L, null, null, 0L, 3L, 5L));
      Statistics stats = new Statistics(latest.id(), latest.schemaId(), 3L, 1234L, cols);
      try (BatchTableCommit commit = table.newBatchWriteBuilder().newCommit()) {
        commit.updateStatistics(stats);
      }
    } else {
      throw new IllegalArgumentException("unknown action " + args[2]);
    }
  }

  private static int id(FileStoreTable table, String name) {
    return table.rowType().getField(name).id();
  }
}
