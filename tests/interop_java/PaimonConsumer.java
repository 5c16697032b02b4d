import java.time.Duration;
import java.util.Map;
import java.util.TreeMap;
import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.consumer.Consumer;
import org.apache.paimon.consumer.ConsumerManager;
import org.apache.paimon.options.ExpireConfig;
import org.apache.paimon.options.Options;
import org.apache.paimon.table.FileStoreTable;

/**
 * Consumers with Apache Paimon's Java implementation.
 * Usage: java -cp ... PaimonConsumer WAREHOUSE db.t list           (prints "id TAB nextSnapshot")
 *        java -cp ... PaimonConsumer WAREHOUSE db.t reset ID NEXT_SNAPSHOT
 *        java -cp ... PaimonConsumer WAREHOUSE db.t expire RETAIN  (keep RETAIN snapshots, any age)
 */
public class PaimonConsumer {
  public static void main(String[] args) throws Exception {
    Options options = new Options();
    options.set("warehouse", args[0]);
    Catalog catalog = CatalogFactory.createCatalog(CatalogContext.create(options));
    FileStoreTable table = (FileStoreTable) catalog.getTable(Identifier.fromString(args[1]));
    ConsumerManager consumers = new ConsumerManager(table.fileIO(), table.location());
    switch (args[2]) {
      case "list":
        for (Map.Entry<String, Long> e : new TreeMap<>(consumers.consumers()).entrySet()) {
          System.out.println(e.getKey() + "\t" + e.getValue());
        }
        break;
      case "reset":
        consumers.resetConsumer(args[3], new Consumer(Long.parseLong(args[4])));
        break;
      case "expire":
        int retain = Integer.parseInt(args[3]);
        ExpireConfig config =
            ExpireConfig.builder()
                .snapshotRetainMin(retain)
                .snapshotRetainMax(retain)
                .snapshotTimeRetain(Duration.ZERO)
                .snapshotMaxDeletes(Integer.MAX_VALUE)
                .build();
        System.out.println(table.newExpireSnapshots().config(config).expire());
        break;
      default:
        throw new IllegalArgumentException("unknown action " + args[2]);
    }
  }
}
