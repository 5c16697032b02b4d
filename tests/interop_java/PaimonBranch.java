import java.util.List;
import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.options.Options;
import org.apache.paimon.schema.SchemaChange;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.sink.BatchTableCommit;
import org.apache.paimon.table.sink.BatchTableWrite;
import org.apache.paimon.table.sink.BatchWriteBuilder;
import org.apache.paimon.table.sink.CommitMessage;

/**
 * Branch operations with Apache Paimon's Java implementation.
 * Usage: java -cp ... PaimonBranch WAREHOUSE db.t create NAME [TAG]
 *        java -cp ... PaimonBranch WAREHOUSE db.t delete NAME
 *        java -cp ... PaimonBranch WAREHOUSE db.t fastforward NAME
 *        java -cp ... PaimonBranch WAREHOUSE db.t list                 (one branch a line)
 *        java -cp ... PaimonBranch WAREHOUSE db.t$branch_b write ID V  (one row (ID, V), one commit)
 *        java -cp ... PaimonBranch WAREHOUSE db.t set KEY VALUE         (ALTER TABLE ... SET option)
 */
public class PaimonBranch {
  public static void main(String[] args) throws Exception {
    Options options = new Options();
    options.set("warehouse", args[0]);
    Catalog catalog = CatalogFactory.createCatalog(CatalogContext.create(options));
    FileStoreTable table = (FileStoreTable) catalog.getTable(Identifier.fromString(args[1]));
    switch (args[2]) {
      case "create":
        if (args.length > 4) {
          table.createBranch(args[3], args[4]);
        } else {
          table.createBranch(args[3]);
        }
        break;
      case "delete":
        table.deleteBranch(args[3]);
        break;
      case "fastforward":
        table.fastForward(args[3]);
        break;
      case "list":
        for (String branch : table.branchManager().branches()) {
          System.out.println(branch);
        }
        break;
      case "set":
        catalog.alterTable(
            Identifier.fromString(args[1]), SchemaChange.setOption(args[3], args[4]), false);
        break;
      case "write":
        BatchWriteBuilder builder = table.newBatchWriteBuilder();
        try (BatchTableWrite write = builder.newWrite()) {
          write.write(GenericRow.of(Long.parseLong(args[3]), BinaryString.fromString(args[4])));
          List<CommitMessage> messages = write.prepareCommit();
          try (BatchTableCommit commit = builder.newCommit()) {
            commit.commit(messages);
          }
        }
        break;
      default:
        throw new IllegalArgumentException("unknown action " + args[2]);
    }
  }
}
