package org.stratalake.spark.bridge;

import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.databind.JsonNode;
import java.util.List;
import java.util.Map;

/**
 * Every message of the bridge, one record each, named as in Python's
 * {@code stratalake.spark.bridge_contract}. A record component is a JSON key (camelCase here,
 * snake_case on the wire); {@link Nullable} marks the keys whose value may be null. Requests are
 * written and replies read only through these records (see {@link PythonBridge#call}), so the
 * keys live here and nowhere else; {@link BridgeContract#describe()} lists them for the test that
 * compares them with Python's dataclasses.
 */
public final class Messages {
  private Messages() {}

  // ---- shared ---------------------------------------------------------------------------------

  public record CatalogConf(String warehouse, Map<String, String> options) {}

  public record TableIdentity(CatalogConf catalog, String database, String table) {}

  public record WriteDistribution(
      String kind,
      @Nullable List<String> partitionKeys,
      @Nullable Integer numBuckets,
      @Nullable List<String> bucketKeys,
      @Nullable Integer compactMask,
      @Nullable Integer numAssigners,
      @Nullable Integer maxAssigners,
      @Nullable Boolean ownersOnly) {}

  public record NativeColumn(String name, boolean nullable) {}

  public record NativeAppendPlan(
      String location,
      long schemaId,
      List<NativeColumn> columns,
      List<String> partitionKeys,
      String defaultPartition,
      String compression,
      int zstdLevel,
      long targetFileSize,
      long rowGroupSize,
      @Nullable Integer pageSize) {}

  public record RowLevelRules(
      @Nullable String updateError,
      @Nullable String deleteError,
      boolean deleteByPosition,
      @Nullable List<String> deleteKeyColumns) {}

  public record TableDescription(
      String name,
      JsonNode schema,
      List<String> partitionKeys,
      List<String> primaryKeys,
      Map<String, String> properties,
      Map<String, String> sourceOptions,
      List<String> writeClusterColumns,
      WriteDistribution writeDistribution,
      @Nullable NativeAppendPlan nativeAppend,
      TableIdentity identity,
      RowLevelRules rowLevel,
      @Nullable String systemTable) {}

  /** One ALTER TABLE change; the fields its kind does not use are null. */
  public record TableChange(
      String kind,
      @Nullable List<String> fieldNames,
      @Nullable String key,
      @Nullable String value,
      JsonNode type,
      @Nullable Boolean nullable,
      @Nullable String comment,
      @Nullable String newName,
      @Nullable Boolean ifExists,
      @Nullable Boolean first,
      @Nullable String after) {}

  public record StagedTable(String mode, TableDescription table) {}

  public record ProcedureParameter(String name, String type, boolean required) {}

  public record ProcedureSpec(String description, List<ProcedureParameter> parameters) {}

  public record ProcedureJob(Map<String, String> options) {}

  /** A procedure's result ({@code schema}, {@code rows}), or a job to run before calling again. */
  public record ProcedureAnswer(
      JsonNode schema,
      @Nullable List<List<JsonNode>> rows,
      @Nullable ProcedureJob job,
      JsonNode state) {}

  public record DeletionFile(String path, long offset, int length) {}

  public record NativeFile(
      String path, String format, long size, long rows, @Nullable DeletionFile deletion) {}

  /**
   * One input partition; {@code partition} is the pickled Python partition (base64 on the wire,
   * decoded as it is read).
   */
  public record ScanSplit(
      byte[] partition,
      int bucket,
      long files,
      long bytes,
      long rows,
      long runs,
      @Nullable Integer splits,
      @Nullable List<NativeFile> nativeFiles,
      @Nullable Integer superseded,
      @Nullable byte[] supersededPartition) {}

  public record ScanPlan(
      @Nullable Long snapshotId,
      List<ScanSplit> splits,
      long rows,
      long bytes,
      List<String> bucketKeys,
      @Nullable Integer numBuckets,
      List<String> ordering,
      @Nullable List<JsonNode> nativeColumns,
      @Nullable Integer countFromMetadata,
      @Nullable Integer countMerged,
      @Nullable List<JsonNode> columnStats) {}

  // ---- requests -------------------------------------------------------------------------------

  public record ListDatabases(CatalogConf catalog) {}

  public record DatabaseExists(CatalogConf catalog, String database) {}

  public record LoadDatabase(CatalogConf catalog, String database) {}

  public record CreateDatabase(CatalogConf catalog, String database, Map<String, String> properties) {}

  public record DropDatabase(CatalogConf catalog, String database, boolean cascade) {}

  public record ListTables(CatalogConf catalog, String database) {}

  public record TableExists(CatalogConf catalog, String database, String table) {}

  public record LoadTable(
      CatalogConf catalog,
      String database,
      String table,
      @Nullable String version,
      @Nullable Long timestampMicros) {}

  public record CreateTable(
      CatalogConf catalog,
      String database,
      String table,
      JsonNode schema,
      List<String> partitionKeys,
      List<String> primaryKeys,
      Map<String, String> properties) {}

  public record StageTable(
      CatalogConf catalog,
      String database,
      String table,
      JsonNode schema,
      List<String> partitionKeys,
      List<String> primaryKeys,
      Map<String, String> properties,
      Map<String, String> writeOptions,
      boolean replace,
      boolean allowOverwrite) {}

  public record AlterTable(
      CatalogConf catalog, String database, String table, List<TableChange> changes) {}

  public record DropTable(CatalogConf catalog, String database, String table) {}

  public record RenameTable(
      CatalogConf catalog, String database, String table, String newDatabase, String newTable) {}

  public record CanDeleteWhere(
      CatalogConf catalog, String database, String table, List<JsonNode> predicates) {}

  /**
   * A DELETE Spark hands over whole; sent again with the answer's {@code state} and the job's
   * {@code jobResults} after its job, or with {@code abort} if the job failed.
   */
  public record DeleteWhere(
      CatalogConf catalog,
      String database,
      String table,
      @Nullable List<JsonNode> predicates,
      @Nullable List<String> jobResults,
      @Nullable String state,
      boolean abort) {}

  /**
   * The commit of a row-level statement's write ({@code messages}: its tasks' pickled messages,
   * base64); sent again with {@code jobResults} after its job, or with {@code abort} if it failed.
   */
  public record RowLevelCommit(
      CatalogConf catalog,
      String database,
      String table,
      List<String> messages,
      @Nullable List<String> jobResults,
      @Nullable String state,
      boolean abort) {}

  /**
   * The new snapshot's id (null: nothing changed), or a distributed job to run first and the
   * {@code state} to send back after it.
   */
  public record JobAnswer(
      @Nullable Long snapshot, @Nullable ProcedureJob job, @Nullable String state) {}

  public record ListProcedures(CatalogConf catalog) {}

  public record DescribeProcedure(CatalogConf catalog, List<String> namespace, String procedure) {}

  public record CallProcedure(
      CatalogConf catalog,
      String procedure,
      @Nullable String currentDatabase,
      Map<String, JsonNode> args,
      JsonNode state,
      @Nullable List<String> jobResults,
      boolean abort) {}

  public record PlanScan(
      Map<String, String> sourceOptions,
      @Nullable List<String> columns,
      boolean count,
      int parallelism,
      List<JsonNode> filters,
      List<JsonNode> runtimeFilters,
      @Nullable Integer limit,
      @JsonProperty("native") boolean nativeRead,
      boolean nativeMerge) {}

  public record PlanChanges(Map<String, String> sourceOptions, List<String> columns, int parallelism) {}

  /** The input partitions of a native {@code $audit_log} read: each a list of change files. */
  public record ChangesPlan(List<List<NativeFile>> partitions) {}

  /** A metadata system table's rows, read on the driver (reply: base64 Arrow IPC, or null). */
  public record ReadSystemTable(Map<String, String> sourceOptions, JsonNode schema) {}

  public record CountRows(Map<String, String> sourceOptions) {}

  /** Nothing: a call that keeps the bridge's pooled Python worker from being reaped as idle. */
  public record KeepAlive() {}

  public record ClassifyFilters(
      Map<String, String> sourceOptions,
      List<JsonNode> filters,
      @JsonProperty("native") boolean nativeRead) {}

  public record PartitionAggregate(String fn, @Nullable String column) {}

  public record AggregatePartitions(
      Map<String, String> sourceOptions, List<String> groupBy, List<PartitionAggregate> aggregates) {}

  public record DynamicAssigners(
      CatalogConf catalog, String database, String table, int numAssigners) {}

  public record CompactionDue(CatalogConf catalog, String database, String table) {}

  public record ListPartitions(CatalogConf catalog, String database, String table) {}

  public record DropPartitions(
      CatalogConf catalog, String database, String table, List<List<JsonNode>> partitions) {}

  public record MergeSchema(
      CatalogConf catalog,
      String database,
      String table,
      JsonNode dataSchema,
      boolean typeWidening,
      boolean explicitCast,
      boolean caseSensitive,
      @Nullable JsonNode expected) {}
}
