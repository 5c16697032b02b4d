package org.stratalake.spark.write;

import org.apache.spark.sql.connector.expressions.Expressions;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.write.DeltaWriteBuilder;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.RowLevelOperation;
import org.apache.spark.sql.connector.write.RowLevelOperationBuilder;
import org.apache.spark.sql.connector.write.SupportsDelta;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.stratalake.spark.bridge.StrataLakeException;
import org.stratalake.spark.source.LakeTable;

/**
 * DELETE / UPDATE / MERGE INTO as a delta keyed by the primary key, so Spark's analyzer plans the
 * changed rows (a {@code WriteDelta}) and {@link RowLevelRewrite} sends them to the Python writer.
 * Append tables have no key: their rows are addressed by the metadata columns data file and
 * position (the snapshot read comes along), and an update is a delete plus an insert. So are the
 * rows a DELETE removes from first-row, partial-update and aggregation tables ({@link
 * LakeTable#deletesByPosition}): a -D record would not delete them, so Python removes the stored
 * rows at those positions, as Paimon's DELETE does; their UPDATE and MERGE stay keyed.
 *
 * <p>Spark builds this during analysis (EXPLAIN too), so it only checks the table's rules, which
 * Python computed when the table was loaded. A DELETE is not checked here: it may still become a
 * metadata-only partition drop ({@code SupportsDeleteV2}); the rewrite checks what remains.
 */
public final class StrataLakeRowLevelOperation implements RowLevelOperationBuilder, SupportsDelta {
  private final LakeTable table;
  private final Command command;

  public StrataLakeRowLevelOperation(LakeTable table, Command command) {
    this.table = table;
    this.command = command;
    if (command != Command.DELETE && table.updateError() != null) {
      throw new StrataLakeException("UnsupportedError", table.updateError());
    }
  }

  @Override
  public RowLevelOperation build() {
    return this;
  }

  @Override
  public Command command() {
    return command;
  }

  @Override
  public String description() {
    return "stratalake " + command + (byPosition() ? " by file and position" : " by primary key");
  }

  /** Spark asks for the row id after the command is known (the builder was given it). */
  private boolean byPosition() {
    return table.isAppendTable() || (command == Command.DELETE && table.deletesByPosition());
  }

  LakeTable table() {
    return table;
  }

  /**
   * Marks the scan of a row-level command (stratalake.spark.source_options.ROW_LEVEL_COMMAND):
   * Python then refuses read options that choose another version (a session's {@code SET
   * spark.stratalake.incremental-between ...}), which would make the command rewrite rows of
   * that version instead of the latest.
   */
  static final String ROW_LEVEL_COMMAND_OPTION = "stratalake.scan.row-level-command";

  @Override
  public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
    java.util.Map<String, String> marked = new java.util.HashMap<>(options.asCaseSensitiveMap());
    marked.put(ROW_LEVEL_COMMAND_OPTION, command.name());
    return table.newScanBuilder(new CaseInsensitiveStringMap(marked));
  }

  @Override
  public NamedReference[] rowId() {
    if (byPosition()) {
      return new NamedReference[] {
        Expressions.column(LakeTable.FILE_COLUMN), Expressions.column(LakeTable.POS_COLUMN)
      };
    }
    NamedReference[] out = new NamedReference[table.primaryKeys().size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = Expressions.column(table.primaryKeys().get(i));
    }
    return out;
  }

  @Override
  public NamedReference[] requiredMetadataAttributes() {
    if (byPosition()) {
      return new NamedReference[] {Expressions.column(LakeTable.SNAPSHOT_COLUMN)};
    }
    return new NamedReference[0];
  }

  @Override
  public boolean representUpdateAsDeleteAndInsert() {
    // Append tables: the old row's position is deleted, the new row appended.
    return table.isAppendTable();
  }

  /** Never used: RowLevelRewrite replaces the WriteDelta before Spark asks for its writer. */
  @Override
  public DeltaWriteBuilder newWriteBuilder(LogicalWriteInfo info) {
    throw new IllegalStateException(
        "stratalake: " + command + " on " + table.name() + " was not rewritten into change "
            + "records; is spark.sql.extensions=org.stratalake.spark.StrataLakeSparkSessionExtensions set?");
  }
}
