import java.util.List;
import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.disk.IOManager;
import org.apache.paimon.options.Options;
import org.apache.paimon.schema.Schema;
import org.apache.paimon.table.Table;
import org.apache.paimon.table.sink.BatchTableCommit;
import org.apache.paimon.table.sink.BatchTableWrite;
import org.apache.paimon.table.sink.BatchWriteBuilder;
import org.apache.paimon.table.sink.CommitMessage;
import org.apache.paimon.types.DataTypes;

/**
 * Writes a table with Apache Paimon's Java implementation: (id BIGINT, v STRING), rows
 * id = from..to-1 with v = prefix + id (null when id % 7 == 0), in one batch commit; the table is
 * created (primary key id when "pk", else an append table) with the given "key=value" options.
 * The option "test.partitions=N" is not a table option: it partitions the table by
 * (dt STRING, h INT), row id going to dt = "2026-11-" + (id % N) (two digits), h = id % 2, and
 * the primary key becomes (id, dt, h).
 * Usage: java -cp ... PaimonWrite WAREHOUSE db.t pk|append FROM TO PREFIX [key=value ...]
 */
public class PaimonWrite {
  public static void main(String[] args) throws Exception {
    Options options = new Options();
    options.set("warehouse", args[0]);
    Catalog catalog = CatalogFactory.createCatalog(CatalogContext.create(options));
    Identifier id = Identifier.fromString(args[1]);
    Schema.Builder schema = Schema.newBuilder().column("id", DataTypes.BIGINT()).column("v", DataTypes.STRING());
    int partitions = 0;
    for (int i = 6; i < args.length; i++) {
      String[] kv = args[i].split("=", 2);
      if (kv[0].equals("test.partitions")) {
        partitions = Integer.parseInt(kv[1]);
      } else {
        schema.option(kv[0], kv[1]);
      }
    }
    if (partitions > 0) {
      schema.column("dt", DataTypes.STRING()).column("h", DataTypes.INT()).partitionKeys("dt", "h");
    }
    if (args[2].equals("pk")) {
      if (partitions > 0) {
        schema.primaryKey("id", "dt", "h");
      } else {
        schema.primaryKey("id");
      }
    }
    catalog.createDatabase(id.getDatabaseName(), true);
    catalog.createTable(id, schema.build(), true);
    Table table = catalog.getTable(id);
    long from = Long.parseLong(args[3]);
    long to = Long.parseLong(args[4]);
    BatchWriteBuilder builder = table.newBatchWriteBuilder();
    try (BatchTableWrite write = builder.newWrite()) {
      // Lookup compaction (changelog-producer lookup, deletion vectors) spills to local disk.
      write.withIOManager(IOManager.create(System.getProperty("java.io.tmpdir")));
      for (long k = from; k < to; k++) {
        BinaryString v = k % 7 == 0 ? null : BinaryString.fromString(args[5] + k);
        if (partitions > 0) {
          String dt = String.format("2026-11-%02d", k % partitions);
          write.write(GenericRow.of(k, v, BinaryString.fromString(dt), (int) (k % 2)));
        } else {
          write.write(GenericRow.of(k, v));
        }
      }
      List<CommitMessage> messages = write.prepareCommit();
      try (BatchTableCommit commit = builder.newCommit()) {
        commit.commit(messages);
      }
    }
  }
}
