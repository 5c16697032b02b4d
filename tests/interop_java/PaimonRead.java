import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.options.Options;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.table.Table;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.table.source.Split;
import org.apache.paimon.types.RowType;

/**
 * Reads tables with Apache Paimon's Java implementation and prints their rows: for each table
 * argument a line "## db.table", then one line per row with its fields tab-separated (String.valueOf,
 * "null" for nulls), or a line "!! <exception>" when Paimon fails to read the table.
 * A table argument may carry read options after an "@": "db.t@scan.tag-name=x,scan.snapshot-id=2"
 * (";" between them instead when a value holds a comma)
 * reads the table copied with them (Paimon's time travel: the snapshot's own schema).
 * Usage: java -cp paimon-bundle.jar:... PaimonRead WAREHOUSE db.t1 [db.t2 ...]
 */
public class PaimonRead {
  public static void main(String[] args) throws Exception {
    Options options = new Options();
    options.set("warehouse", args[0]);
    Catalog catalog = CatalogFactory.createCatalog(CatalogContext.create(options));
    for (int t = 1; t < args.length; t++) {
      System.out.println("## " + args[t]);
      try {
        String[] nameAndOptions = args[t].split("@", 2);
        Table table = catalog.getTable(Identifier.fromString(nameAndOptions[0]));
        if (nameAndOptions.length == 2) {
          Map<String, String> readOptions = new HashMap<>();
          // ";" separates the options when a value holds a comma ("incremental-between=0,4").
          String separator = nameAndOptions[1].contains(";") ? ";" : ",";
          for (String kv : nameAndOptions[1].split(separator)) {
            String[] pair = kv.split("=", 2);
            readOptions.put(pair[0], pair[1]);
          }
          table = table.copy(readOptions);
        }
        ReadBuilder rb = table.newReadBuilder();
        List<Split> splits = rb.newScan().plan().splits();
        RowType type = table.rowType();
        InternalRow.FieldGetter[] getters = new InternalRow.FieldGetter[type.getFieldCount()];
        for (int i = 0; i < getters.length; i++) {
          getters[i] = InternalRow.createFieldGetter(type.getTypeAt(i), i);
        }
        StringBuilder out = new StringBuilder();
        try (RecordReader<InternalRow> reader = rb.newRead().createReader(splits)) {
          reader.forEachRemaining(row -> {
            for (int i = 0; i < getters.length; i++) {
              if (i > 0) out.append('\t');
              out.append(String.valueOf(getters[i].getFieldOrNull(row)));
            }
            out.append('\n');
          });
        }
        System.out.print(out);
      } catch (Throwable e) {
        String msg = String.valueOf(e).replace('\n', ' ');
        System.out.println("!! " + msg.substring(0, Math.min(msg.length(), 500)));
      }
    }
  }
}
