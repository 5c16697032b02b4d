import java.util.ArrayList;
import java.util.List;
import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.options.Options;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.schema.Schema;
import org.apache.paimon.table.Table;
import org.apache.paimon.table.sink.BatchTableCommit;
import org.apache.paimon.table.sink.BatchTableWrite;
import org.apache.paimon.table.sink.BatchWriteBuilder;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.table.source.Split;
import org.apache.paimon.types.DataTypes;

/**
 * Paimon's own HiveCatalog (metastore = hive) against the test metastore.
 *
 * <p>{@code read URI WAREHOUSE DB TABLE}: prints the database's tables, then the table's first
 * (BIGINT) column, sorted. {@code create URI WAREHOUSE DB TABLE}: creates the database and a
 * table (id BIGINT primary key with dt, v STRING, dt STRING partition, metastore-partitioned) and
 * writes ids 1..3 in partition 'd1'.
 */
public class PaimonHive {
  public static void main(String[] args) throws Exception {
    Options options = new Options();
    options.set("metastore", "hive");
    options.set("uri", args[1]);
    options.set("warehouse", args[2]);
    try (Catalog catalog = CatalogFactory.createCatalog(CatalogContext.create(options))) {
      Identifier id = Identifier.create(args[3], args[4]);
      if (args[0].equals("create")) {
        catalog.createDatabase(args[3], true);
        Schema schema =
            Schema.newBuilder()
                .column("id", DataTypes.BIGINT().notNull())
                .column("v", DataTypes.STRING())
                .column("dt", DataTypes.STRING().notNull())
                .primaryKey("id", "dt")
                .partitionKeys("dt")
                .option("bucket", "1")
                .option("metastore.partitioned-table", "true")
                .build();
        catalog.createTable(id, schema, false);
        BatchWriteBuilder builder = catalog.getTable(id).newBatchWriteBuilder();
        try (BatchTableWrite write = builder.newWrite();
            BatchTableCommit commit = builder.newCommit()) {
          for (long k = 1; k <= 3; k++) {
            write.write(
                GenericRow.of(k, BinaryString.fromString("v" + k), BinaryString.fromString("d1")));
          }
          commit.commit(write.prepareCommit());
        }
        System.out.println("CREATED");
        return;
      }
      System.out.println("TABLES " + String.join(",", catalog.listTables(args[3])));
      Table table = catalog.getTable(id);
      ReadBuilder rb = table.newReadBuilder();
      List<Split> splits = rb.newScan().plan().splits();
      List<Long> ids = new ArrayList<>();
      try (RecordReader<InternalRow> reader = rb.newRead().createReader(splits)) {
        reader.forEachRemaining(row -> ids.add(row.getLong(0)));
      }
      ids.sort(null);
      System.out.println("IDS " + ids);
    }
  }
}
