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
import org.apache.paimon.table.sink.CommitMessage;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.types.DataTypes;
import org.apache.paimon.types.RowType;

/**
 * Apache Paimon's Java RESTCatalog as a client of a REST catalog server.
 * Usage: java -cp paimon-bundle.jar:... PaimonRest KEY=VALUE... -- COMMAND [ARGS]
 * (catalog options such as metastore=rest, uri=..., warehouse=..., token.provider=bear, token=...).
 * Commands:
 *   list                        "DB name" per database, then "TABLE db.table" per table
 *   read db.t                   the table's rows, fields tab-separated (String.valueOf, "null")
 *   write db.t FROM TO PREFIX   creates the database and a table (id BIGINT primary key, v STRING)
 *                               if missing, then commits rows (id, PREFIX + id) for ids FROM..TO-1
 */
public class PaimonRest {
  public static void main(String[] args) throws Exception {
    Options options = new Options();
    int i = 0;
    for (; i < args.length && !args[i].equals("--"); i++) {
      String[] kv = args[i].split("=", 2);
      options.set(kv[0], kv[1]);
    }
    String command = args[i + 1];
    try (Catalog catalog = CatalogFactory.createCatalog(CatalogContext.create(options))) {
      if (command.equals("list")) {
        List<String> dbs = catalog.listDatabases();
        for (String db : dbs) System.out.println("DB " + db);
        for (String db : dbs) {
          for (String t : catalog.listTables(db)) System.out.println("TABLE " + db + "." + t);
        }
      } else if (command.equals("read")) {
        Table table = catalog.getTable(Identifier.fromString(args[i + 2]));
        ReadBuilder rb = table.newReadBuilder();
        RowType type = table.rowType();
        InternalRow.FieldGetter[] getters = new InternalRow.FieldGetter[type.getFieldCount()];
        for (int f = 0; f < getters.length; f++) getters[f] = InternalRow.createFieldGetter(type.getTypeAt(f), f);
        StringBuilder out = new StringBuilder();
        try (RecordReader<InternalRow> reader = rb.newRead().createReader(rb.newScan().plan().splits())) {
          reader.forEachRemaining(row -> {
            for (int f = 0; f < getters.length; f++) {
              if (f > 0) out.append('\t');
              out.append(String.valueOf(getters[f].getFieldOrNull(row)));
            }
            out.append('\n');
          });
        }
        System.out.print(out);
      } else if (command.equals("write")) {
        Identifier id = Identifier.fromString(args[i + 2]);
        long from = Long.parseLong(args[i + 3]);
        long to = Long.parseLong(args[i + 4]);
        String prefix = args[i + 5];
        Schema schema = Schema.newBuilder().column("id", DataTypes.BIGINT()).column("v", DataTypes.STRING())
            .primaryKey("id").option("bucket", "1").build();
        catalog.createDatabase(id.getDatabaseName(), true);
        catalog.createTable(id, schema, true);
        Table table = catalog.getTable(id);
        BatchWriteBuilder builder = table.newBatchWriteBuilder();
        try (BatchTableWrite write = builder.newWrite()) {
          for (long k = from; k < to; k++) write.write(GenericRow.of(k, BinaryString.fromString(prefix + k)));
          List<CommitMessage> messages = write.prepareCommit();
          try (BatchTableCommit commit = builder.newCommit()) {
            commit.commit(messages);
          }
        }
      } else {
        throw new IllegalArgumentException("unknown command " + command);
      }
    }
  }
}
