import java.util.ArrayList;
import java.util.List;
import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.jdbc.JdbcCatalog;
import org.apache.paimon.options.Options;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.schema.Schema;
import org.apache.paimon.table.Table;
import org.apache.paimon.table.sink.BatchTableCommit;
import org.apache.paimon.table.sink.BatchTableWrite;
import org.apache.paimon.table.sink.BatchWriteBuilder;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.types.DataTypes;

/**
 * Paimon's JdbcCatalog, for tests/interop_java/test_jdbc_catalog_java.py.
 *
 * <p>{@code PaimonJdbc ACTION ARGS... -- key=value...} (the catalog options):
 * {@code list} prints {@code db NAME} and {@code table DB.NAME} lines; {@code read DB.T} prints
 * {@code id<TAB>v} rows; {@code write DB.T FROM TO} creates the database and a primary-key table
 * (if missing) and commits rows {@code (k, "java k")}; {@code hold DB T MILLIS} holds the
 * catalog's lock of DB.T, printing {@code held} once it has it and {@code released} after.
 */
public class PaimonJdbc {
  public static void main(String[] args) throws Exception {
    List<String> positional = new ArrayList<>();
    Options options = new Options();
    boolean opts = false;
    for (String a : args) {
      if (a.equals("--")) {
        opts = true;
      } else if (opts) {
        String[] kv = a.split("=", 2);
        options.set(kv[0], kv[1]);
      } else {
        positional.add(a);
      }
    }
    options.set("cache-enabled", "false");
    try (Catalog catalog = CatalogFactory.createCatalog(CatalogContext.create(options))) {
      String action = positional.get(0);
      if (action.equals("list")) {
        for (String db : catalog.listDatabases()) {
          System.out.println("db " + db);
          for (String t : catalog.listTables(db)) {
            System.out.println("table " + db + "." + t);
          }
        }
      } else if (action.equals("read")) {
        Table table = catalog.getTable(Identifier.fromString(positional.get(1)));
        ReadBuilder rb = table.newReadBuilder();
        StringBuilder out = new StringBuilder();
        try (RecordReader<InternalRow> reader = rb.newRead().createReader(rb.newScan().plan().splits())) {
          reader.forEachRemaining(row -> out.append(row.getLong(0)).append('\t').append(row.getString(1)).append('\n'));
        }
        System.out.print(out);
      } else if (action.equals("write")) {
        Identifier id = Identifier.fromString(positional.get(1));
        catalog.createDatabase(id.getDatabaseName(), true);
        Schema schema = Schema.newBuilder().column("id", DataTypes.BIGINT()).column("v", DataTypes.STRING())
            .primaryKey("id").option("bucket", "1").build();
        catalog.createTable(id, schema, true);
        BatchWriteBuilder builder = catalog.getTable(id).newBatchWriteBuilder();
        try (BatchTableWrite write = builder.newWrite(); BatchTableCommit commit = builder.newCommit()) {
          for (long k = Long.parseLong(positional.get(2)); k < Long.parseLong(positional.get(3)); k++) {
            write.write(GenericRow.of(k, BinaryString.fromString("java " + k)));
          }
          commit.commit(write.prepareCommit());
        }
      } else if (action.equals("hold")) {
        long millis = Long.parseLong(positional.get(3));
        ((JdbcCatalog) catalog).runWithLock(Identifier.create(positional.get(1), positional.get(2)), () -> {
          System.out.println("held");
          System.out.flush();
          Thread.sleep(millis);
          return null;
        });
        System.out.println("released");
      } else {
        throw new IllegalArgumentException("unknown action " + action);
      }
    }
  }
}
