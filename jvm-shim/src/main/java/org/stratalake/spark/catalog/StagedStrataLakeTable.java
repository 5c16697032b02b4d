package org.stratalake.spark.catalog;

import java.util.EnumSet;
import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.StagedTable;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.SupportsTruncate;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;
import org.stratalake.spark.bridge.Messages.CreateTable;
import org.stratalake.spark.bridge.Messages.StageTable;
import org.stratalake.spark.bridge.Messages;

/**
 * CREATE/REPLACE TABLE ... AS SELECT and DataFrameWriter.saveAsTable go through here.
 *
 * <p>The table is created only when Spark starts writing, because DataFrameWriter options
 * (e.g. {@code .option("primary-key", "id")}) reach the write, not the table properties; Python
 * merges them into the new table's options. Replacing an existing table whose columns are
 * unchanged overwrites it instead (one snapshot, primary key and history kept); otherwise it is
 * re-created, inheriting its primary key when the query does not name one.
 */
public final class StagedStrataLakeTable implements StagedTable, SupportsWrite {
  private final SparkCatalog catalog;
  private final Identifier ident;
  private final boolean replacing;
  private final CreateTable createRequest;
  private final StructType schema;
  private StrataLakeTable staged; // the table written to, once the write started
  private boolean createdHere;

  StagedStrataLakeTable(
      SparkCatalog catalog, Identifier ident, StrataLakeTable existing, CreateTable request) {
    this.catalog = catalog;
    this.ident = ident;
    this.replacing = existing != null;
    this.createRequest = request;
    this.schema = (StructType) DataType.fromJson(request.schema().toString());
  }

  private Messages.StagedTable stage(Map<String, String> writeOptions, boolean allowOverwrite) {
    CreateTable c = createRequest;
    return catalog.stage(
        new StageTable(
            c.catalog(),
            c.database(),
            c.table(),
            c.schema(),
            c.partitionKeys(),
            c.primaryKeys(),
            c.properties(),
            writeOptions,
            replacing,
            allowOverwrite));
  }

  @Override
  public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
    Messages.StagedTable answer = stage(info.options().asCaseSensitiveMap(), true);
    staged = catalog.table(answer.table());
    boolean overwrite = "truncate".equals(answer.mode());
    createdHere = !overwrite;
    WriteBuilder builder = staged.newWriteBuilder(info);
    return overwrite ? ((SupportsTruncate) builder).truncate() : builder;
  }

  @Override
  public void commitStagedChanges() {
    if (staged == null) {
      // REPLACE TABLE / CREATE OR REPLACE TABLE without a query: nothing was written.
      staged = catalog.table(stage(Map.of(), false).table());
    }
  }

  @Override
  public void abortStagedChanges() {
    if (createdHere) {
      catalog.dropTable(ident);
    }
  }

  @Override
  public String name() {
    return ident.toString();
  }

  // Spark derives columns() from schema(); PythonTable speaks StructType too.
  @Override
  @SuppressWarnings("deprecation")
  public StructType schema() {
    return schema;
  }

  @Override
  public Set<TableCapability> capabilities() {
    return EnumSet.of(TableCapability.BATCH_WRITE, TableCapability.TRUNCATE);
  }
}
