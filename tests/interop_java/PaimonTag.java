import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.options.Options;
import org.apache.paimon.table.Table;

/**
 * Creates or deletes a tag with Apache Paimon's Java implementation.
 * Usage: java -cp ... PaimonTag WAREHOUSE db.t create NAME SNAPSHOT_ID
 *        java -cp ... PaimonTag WAREHOUSE db.t delete NAME
 */
public class PaimonTag {
  public static void main(String[] args) throws Exception {
    Options options = new Options();
    options.set("warehouse", args[0]);
    Catalog catalog = CatalogFactory.createCatalog(CatalogContext.create(options));
    Table table = catalog.getTable(Identifier.fromString(args[1]));
    if (args[2].equals("create")) {
      table.createTag(args[3], Long.parseLong(args[4]));
    } else if (args[2].equals("delete")) {
      table.deleteTag(args[3]);
    } else {
      throw new IllegalArgumentException("unknown action " + args[2]);
    }
  }
}
