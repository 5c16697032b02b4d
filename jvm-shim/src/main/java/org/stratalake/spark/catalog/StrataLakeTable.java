package org.stratalake.spark.catalog;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.catalog.MetadataColumn;
import org.apache.spark.sql.connector.catalog.SupportsAtomicPartitionManagement;
import org.apache.spark.sql.connector.catalog.SupportsDeleteV2;
import org.apache.spark.sql.connector.catalog.SupportsMetadataColumns;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.SupportsRowLevelOperations;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.catalog.constraints.Constraint;
import org.apache.spark.sql.connector.expressions.Expressions;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.RowLevelOperationBuilder;
import org.apache.spark.sql.connector.write.RowLevelOperationInfo;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.stratalake.spark.bridge.Messages.CanDeleteWhere;
import org.stratalake.spark.bridge.Messages.CompactionDue;
import org.stratalake.spark.bridge.Messages.JobAnswer;
import org.stratalake.spark.bridge.Messages.RowLevelCommit;
import org.stratalake.spark.bridge.Messages.DeleteWhere;
import org.stratalake.spark.bridge.Messages.DropPartitions;
import org.stratalake.spark.bridge.Messages.DynamicAssigners;
import org.stratalake.spark.bridge.Messages.ListPartitions;
import org.stratalake.spark.bridge.Messages.MergeSchema;
import org.stratalake.spark.bridge.Messages.NativeAppendPlan;
import org.stratalake.spark.bridge.Messages.TableDescription;
import org.stratalake.spark.bridge.Messages.TableIdentity;
import org.stratalake.spark.bridge.Messages.WriteDistribution;
import org.stratalake.spark.bridge.Operation;
import org.stratalake.spark.bridge.PythonBridge;
import org.stratalake.spark.scan.ColumnarPythonScans;
import org.stratalake.spark.scan.DriverSystemTables;
import org.stratalake.spark.scan.StrataLakeScanBuilder;
import org.stratalake.spark.source.LakeSource;
import org.stratalake.spark.source.LakeTable;
import org.stratalake.spark.write.PredicateJson;
import org.stratalake.spark.write.StrataLakeRowLevelOperation;
import org.stratalake.spark.write.StrataLakeWriteBuilder;

/**
 * A stratalake table as Spark sees it: metadata from the Python catalog, scans and writes served
 * by the Python data source "stratalake".
 *
 * <p>The data source learns which table (and which snapshot, for time travel) it serves from the
 * "source_options" the catalog computed; they are added to every scan's and write's options.
 */
public class StrataLakeTable
    implements Table,
        SupportsRead,
        SupportsWrite,
        SupportsRowLevelOperations,
        SupportsDeleteV2,
        SupportsMetadataColumns,
        SupportsAtomicPartitionManagement,
        LakeTable {
  private final String name;
  private final StructType schema;
  private final List<String> partitionKeys;
  private final List<String> primaryKeys;
  private final List<String> writeClusterColumns;
  private final WriteDistribution writeDistribution;
  private final NativeAppendPlan nativeAppend;
  private final Map<String, String> properties;
  private final Map<String, String> sourceOptions;
  // Row-level DML: which table the bridge acts on, and why a statement is refused (null: allowed).
  private final TableIdentity identity;
  private final String updateError;
  private final String deleteError;
  private final boolean deleteByPosition;
  private final List<String> deleteKeyColumns;
  private final String systemTable;
  // Write-time schema evolution: whether Spark leaves this write's columns to the shim
  // (sql.MergeSchemaWrites), and the merge planned for it (null: none).
  private final boolean anySchema;
  private final SchemaMerge merge;

  /** A merge Python planned: the write's schema, its switches, and the schema Python answered. */
  private record SchemaMerge(
      StructType data,
      boolean typeWidening,
      boolean explicitCast,
      boolean caseSensitive,
      JsonNode planned,
      boolean changes) {}

  private StrataLakeTable(
      StrataLakeTable base, StructType schema, boolean anySchema, SchemaMerge merge) {
    this.name = base.name;
    this.schema = schema;
    this.partitionKeys = base.partitionKeys;
    this.primaryKeys = base.primaryKeys;
    this.writeClusterColumns = base.writeClusterColumns;
    this.writeDistribution = base.writeDistribution;
    this.nativeAppend = base.nativeAppend;
    this.properties = base.properties;
    this.sourceOptions = base.sourceOptions;
    this.identity = base.identity;
    this.updateError = base.updateError;
    this.deleteError = base.deleteError;
    this.deleteByPosition = base.deleteByPosition;
    this.deleteKeyColumns = base.deleteKeyColumns;
    this.systemTable = base.systemTable;
    this.anySchema = anySchema;
    this.merge = merge;
  }

  StrataLakeTable(TableDescription meta) {
    this.name = meta.name();
    this.schema = (StructType) DataType.fromJson(meta.schema().toString());
    this.partitionKeys = meta.partitionKeys();
    this.primaryKeys = meta.primaryKeys();
    this.writeClusterColumns = meta.writeClusterColumns();
    this.writeDistribution = meta.writeDistribution();
    this.nativeAppend = meta.nativeAppend();
    this.properties = new HashMap<>(meta.properties());
    this.sourceOptions = new HashMap<>(meta.sourceOptions());
    this.identity = meta.identity();
    this.updateError = meta.rowLevel().updateError();
    this.deleteError = meta.rowLevel().deleteError();
    this.deleteByPosition = meta.rowLevel().deleteByPosition();
    this.deleteKeyColumns = meta.rowLevel().deleteKeyColumns();
    this.systemTable = meta.systemTable();
    this.anySchema = false;
    this.merge = null;
  }

  @Override
  public String name() {
    return name;
  }

  // Spark derives columns() from schema(); PythonTable speaks StructType too.
  @Override
  @SuppressWarnings("deprecation")
  public StructType schema() {
    return schema;
  }

  @Override
  public Transform[] partitioning() {
    Transform[] out = new Transform[partitionKeys.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = Expressions.identity(partitionKeys.get(i));
    }
    return out;
  }

  @Override
  public Map<String, String> properties() {
    return properties;
  }

  @Override
  public Constraint[] constraints() {
    if (primaryKeys.isEmpty()) {
      return new Constraint[0];
    }
    NamedReference[] cols = new NamedReference[primaryKeys.size()];
    for (int i = 0; i < cols.length; i++) {
      cols[i] = Expressions.column(primaryKeys.get(i));
    }
    // Paimon keeps no constraint name; a fixed one makes SHOW CREATE TABLE deterministic.
    return new Constraint[] {
      Constraint.primaryKey("pk", cols).enforced(false).rely(false).build()
    };
  }

  /** Whether rows are addressed by file and position (an append table, not a system table). */
  @Override
  public boolean isAppendTable() {
    return primaryKeys.isEmpty() && systemTable == null;
  }

  @Override
  public boolean deletesByPosition() {
    return deleteByPosition && systemTable == null;
  }

  @Override
  public MetadataColumn[] metadataColumns() {
    // Key tables whose DELETE is by position expose them too; Python refuses them elsewhere.
    if (!isAppendTable() && !deletesByPosition()) {
      return new MetadataColumn[0];
    }
    return new MetadataColumn[] {
      new RowIdColumn(FILE_COLUMN, DataTypes.StringType),
      new RowIdColumn(POS_COLUMN, DataTypes.LongType),
      new RowIdColumn(SNAPSHOT_COLUMN, DataTypes.LongType)
    };
  }

  /** A non-null metadata column the Python reader fills (append tables, DELETE by position). */
  private static final class RowIdColumn implements MetadataColumn {
    private final String name;
    private final DataType type;

    RowIdColumn(String name, DataType type) {
      this.name = name;
      this.type = type;
    }

    @Override
    public String name() {
      return name;
    }

    @Override
    public DataType dataType() {
      return type;
    }

    @Override
    public boolean isNullable() {
      return false;
    }
  }

  @Override
  public Set<TableCapability> capabilities() {
    if ("audit_log".equals(systemTable)) { // a change stream too (stratalake.spark.streaming)
      return EnumSet.of(TableCapability.BATCH_READ, TableCapability.MICRO_BATCH_READ);
    }
    if (systemTable != null) {
      return EnumSet.of(TableCapability.BATCH_READ); // t$snapshots etc. are read-only
    }
    Set<TableCapability> out =
        EnumSet.of(
            TableCapability.BATCH_READ,
            TableCapability.BATCH_WRITE,
            TableCapability.TRUNCATE,
            TableCapability.OVERWRITE_BY_FILTER,
            TableCapability.OVERWRITE_DYNAMIC,
            // Served by the Python source's stream reader and writer (stratalake.spark.streaming).
            TableCapability.MICRO_BATCH_READ,
            TableCapability.STREAMING_WRITE);
    if (anySchema) {
      // Only for a write that evolves the schema: its columns are resolved by
      // sql.MergeSchemaWrites, as Paimon's analysis rules resolve them (other writes keep Spark's
      // own checks).
      out.add(TableCapability.ACCEPT_ANY_SCHEMA);
    }
    return out;
  }

  @Override
  public LakeTable acceptingAnySchema() {
    return new StrataLakeTable(this, schema, true, null);
  }

  @Override
  public boolean awaitsSchemaMerge() {
    return anySchema && merge == null;
  }

  /**
   * Asks Python for the schema this table has once it takes rows of {@code data}
   * (stratalake.catalog.schema_merge; refusals name the table, column and types); nothing is
   * committed until the write starts.
   */
  @Override
  public LakeTable withSchemaMerge(
      StructType data, boolean typeWidening, boolean explicitCast, boolean caseSensitive) {
    JsonNode planned =
        PythonBridge.call(
            Operation.MERGE_SCHEMA,
            new MergeSchema(
                identity.catalog(),
                identity.database(),
                identity.table(),
                dataSchemaJson(data),
                typeWidening,
                explicitCast,
                caseSensitive,
                null));
    StructType merged = (StructType) DataType.fromJson(planned.toString());
    boolean changes = !merged.equals(schema);
    return new StrataLakeTable(
        this,
        merged,
        true,
        new SchemaMerge(data, typeWidening, explicitCast, caseSensitive, planned, changes));
  }

  private static JsonNode dataSchemaJson(StructType data) {
    try {
      return PythonBridge.JSON.readTree(data.json());
    } catch (java.io.IOException e) {
      throw new IllegalStateException("stratalake: cannot encode the write's schema", e);
    }
  }

  /**
   * Commits the planned schema (Python checks that the table still evolves to it) before the
   * write's first task, as Paimon commits the evolved schema before writing: the data files are
   * written under the new schema. A write that then fails leaves the new schema, as in Paimon.
   */
  @Override
  public void commitSchemaMerge() {
    if (merge == null || !merge.changes()) {
      return;
    }
    PythonBridge.call(
        Operation.MERGE_SCHEMA,
        new MergeSchema(
            identity.catalog(),
            identity.database(),
            identity.table(),
            dataSchemaJson(merge.data()),
            merge.typeWidening(),
            merge.explicitCast(),
            merge.caseSensitive(),
            merge.planned()));
  }

  /**
   * A query's options (WITH (...), .option(...)) under the catalog's source options. A user key
   * that spells a catalog key in another case ('Stratalake.Warehouse') is dropped: Spark's
   * case-insensitive option maps would otherwise let it replace the catalog's warehouse, table or
   * location, and move reads and writes out of the catalog's warehouse.
   */
  @Override
  public Map<String, String> withSourceOptions(Map<String, String> userOptions) {
    java.util.Set<String> reserved = new java.util.HashSet<>();
    for (String key : sourceOptions.keySet()) {
      reserved.add(key.toLowerCase(java.util.Locale.ROOT));
    }
    Map<String, String> merged = new HashMap<>();
    userOptions.forEach(
        (key, value) -> {
          if (!reserved.contains(key.toLowerCase(java.util.Locale.ROOT))) {
            merged.put(key, value);
          }
        });
    merged.putAll(sourceOptions);
    return merged;
  }

  /** Prefix of session settings that are read options of every scan in the session. */
  static final String SESSION_OPTION_PREFIX = "spark.stratalake.";

  /**
   * The query's read options over the session's {@code spark.stratalake.<option>} settings
   * ({@code SET spark.stratalake.scan.snapshot-id = 1}): SQL has no per-query read options, and
   * Paimon's Spark integration takes {@code spark.paimon.<option>} settings the same way (its
   * dynamic options). The query's own option wins. Python validates them all
   * (stratalake.spark.read_options).
   */
  static Map<String, String> withSessionOptions(Map<String, String> queryOptions) {
    Map<String, String> merged = new HashMap<>();
    scala.jdk.javaapi.CollectionConverters.asJava(
            org.apache.spark.sql.internal.SQLConf.get().getAllConfs())
        .forEach(
            (key, value) -> {
              if (key.startsWith(SESSION_OPTION_PREFIX)
                  && key.length() > SESSION_OPTION_PREFIX.length()) {
                merged.put(key.substring(SESSION_OPTION_PREFIX.length()), value);
              }
            });
    java.util.Set<String> given = new java.util.HashSet<>();
    queryOptions.keySet().forEach(k -> given.add(k.toLowerCase(java.util.Locale.ROOT)));
    merged.keySet().removeIf(k -> given.contains(k.toLowerCase(java.util.Locale.ROOT)));
    merged.putAll(queryOptions);
    return merged;
  }

  /** System tables whose rows are the table's rows (change records, the top level). */
  private static final Set<String> ROW_SYSTEM_TABLES = Set.of("audit_log", "binlog", "ro");

  @Override
  public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
    // Our builder wraps Spark's Python scan so pushdowns, statistics and partitioning reach
    // Python (StrataLakeScanBuilder); the splits are still read by the Python data source.
    Map<String, String> readOptions = withSessionOptions(options.asCaseSensitiveMap());
    if (systemTable != null) {
      // System tables (t$files...) are small or computed: the plain Python scan reads them.
      CaseInsensitiveStringMap merged = new CaseInsensitiveStringMap(withSourceOptions(readOptions));
      if (ROW_SYSTEM_TABLES.contains(systemTable)) {
        // Those holding the table's rows can be millions of rows: columnar, the used columns only.
        return ColumnarPythonScans.wrap(
            schema,
            read -> ((SupportsRead) LakeSource.pythonTable(read)).newScanBuilder(merged),
            "audit_log".equals(systemTable) ? merged.asCaseSensitiveMap() : null);
      }
      // Metadata tables are a few rows from metadata files: answered on the driver when Python
      // says so (DriverSystemTables), else read by the plain Python scan.
      return DriverSystemTables.builder(
          schema,
          merged.asCaseSensitiveMap(),
          () -> ((SupportsRead) LakeSource.pythonTable(schema)).newScanBuilder(merged));
    }
    return new StrataLakeScanBuilder(this, withSourceOptions(readOptions));
  }

  @Override
  public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
    return new StrataLakeWriteBuilder(this, info);
  }

  @Override
  public RowLevelOperationBuilder newRowLevelOperationBuilder(RowLevelOperationInfo info) {
    if (systemTable != null) {
      throw new UnsupportedOperationException("stratalake: system table " + name + " is read-only");
    }
    return new StrataLakeRowLevelOperation(this, info.command());
  }

  /**
   * Whether a DELETE runs without reading rows (a truncate, a partition drop, or -D records for
   * whole primary keys given as literals). Python decides; Spark asks while optimizing (EXPLAIN
   * too), so this only reads metadata.
   */
  @Override
  public boolean canDeleteWhere(Predicate[] predicates) {
    List<JsonNode> json = PredicateJson.toJson(predicates);
    if (json == null || systemTable != null) {
      return false;
    }
    CanDeleteWhere req =
        new CanDeleteWhere(identity.catalog(), identity.database(), identity.table(), json);
    return PythonBridge.call(Operation.CAN_DELETE_WHERE, req);
  }

  /**
   * Runs a DELETE Python accepted in {@link #canDeleteWhere}. One that reads and rewrites rows
   * comes back as a distributed job (Python's {@code spark/delete_job.py}): its tasks find and
   * rewrite the matching rows, and Python commits their results once.
   */
  @Override
  public void deleteWhere(Predicate[] predicates) {
    List<JsonNode> json = PredicateJson.toJson(predicates);
    JobAnswer answer =
        PythonBridge.call(Operation.DELETE_WHERE, deleteRequest(json, null, null, false));
    runThenCommit(
        answer,
        (results, abort) ->
            PythonBridge.call(
                Operation.DELETE_WHERE, deleteRequest(json, results, answer.state(), abort)));
  }

  private DeleteWhere deleteRequest(
      List<JsonNode> json, List<String> results, String state, boolean abort) {
    return new DeleteWhere(
        identity.catalog(), identity.database(), identity.table(), json, results, state, abort);
  }

  /**
   * The commit of a row-level statement by position (Python's {@code row_level_commit}): Python
   * commits it, or first asks for the job that rewrites the touched files in Spark tasks.
   */
  @Override
  public void commitRowLevel(List<String> messages) {
    JobAnswer answer =
        PythonBridge.call(
            Operation.ROW_LEVEL_COMMIT,
            new RowLevelCommit(
                identity.catalog(), identity.database(), identity.table(), messages, null, null,
                false));
    runThenCommit(
        answer,
        (results, abort) ->
            PythonBridge.call(
                Operation.ROW_LEVEL_COMMIT,
                new RowLevelCommit(
                    identity.catalog(), identity.database(), identity.table(), messages, results,
                    answer.state(), abort)));
  }

  /**
   * Runs the job of {@code answer}, if any, then hands Python its results. If the job fails,
   * nothing was committed: Python is told to abort (it deletes what the statement wrote), and
   * the job's error is thrown.
   */
  private static void runThenCommit(
      JobAnswer answer, java.util.function.BiConsumer<List<String>, Boolean> next) {
    if (answer.job() == null) {
      return;
    }
    List<String> results;
    try {
      results = StrataLakeProcedure.runJob(answer.job());
    } catch (Throwable e) { // a failed job is a SparkException, which Java does not declare
      try {
        next.accept(null, true);
      } catch (RuntimeException cleanup) {
        e.addSuppressed(cleanup);
      }
      throw org.stratalake.spark.bridge.Errors.sneaky(e);
    }
    next.accept(results, false);
  }

  // ---- partition management: SHOW PARTITIONS, ALTER TABLE ... ADD/DROP PARTITION, TRUNCATE ----
  // As Paimon's Spark table: a partition exists while it holds data, so a drop (or a truncate)
  // is one OVERWRITE commit deleting its files (Python: stratalake.table.partitions).

  @Override
  public StructType partitionSchema() {
    StructType out = new StructType();
    if (systemTable != null) {
      return out;
    }
    for (String key : partitionKeys) {
      out = out.add(schema.apply(key));
    }
    return out;
  }

  @Override
  public InternalRow[] listPartitionIdentifiers(String[] names, InternalRow ident) {
    StructType partitionSchema = partitionSchema();
    List<List<JsonNode>> listed =
        PythonBridge.call(
            Operation.LIST_PARTITIONS,
            new ListPartitions(identity.catalog(), identity.database(), identity.table()));
    List<InternalRow> out = new java.util.ArrayList<>();
    for (List<JsonNode> values : listed) {
      InternalRow row = PartitionValues.fromJson(values, partitionSchema);
      boolean matches = true;
      for (int i = 0; i < names.length && matches; i++) {
        int index = partitionSchema.fieldIndex(names[i]);
        DataType type = partitionSchema.fields()[index].dataType();
        matches = java.util.Objects.equals(row.get(index, type), ident.get(i, type));
      }
      if (matches) {
        out.add(row);
      }
    }
    return out.toArray(new InternalRow[0]);
  }

  @Override
  public boolean dropPartitions(InternalRow[] idents) {
    StructType partitionSchema = partitionSchema();
    List<List<JsonNode>> partitions = new java.util.ArrayList<>();
    for (InternalRow ident : idents) {
      partitions.add(PartitionValues.toJson(ident, partitionSchema));
    }
    Long snapshot =
        PythonBridge.call(
            Operation.DROP_PARTITIONS,
            new DropPartitions(
                identity.catalog(), identity.database(), identity.table(), partitions));
    return snapshot != null;
  }

  /** TRUNCATE TABLE ... PARTITION: the partition's rows go, which is dropping it here. */
  @Override
  public boolean truncatePartitions(InternalRow[] idents) {
    dropPartitions(idents);
    return true;
  }

  @Override
  public boolean truncatePartition(InternalRow ident) {
    return truncatePartitions(new InternalRow[] {ident});
  }

  /**
   * ALTER TABLE ... ADD PARTITION: refused, as Paimon refuses it without a metastore that syncs
   * partitions. A filesystem-catalog table keeps no partition list apart from its data files.
   */
  @Override
  public void createPartitions(InternalRow[] idents, Map<String, String>[] properties) {
    StructType partitionSchema = partitionSchema();
    List<String> specs = new java.util.ArrayList<>();
    for (InternalRow ident : idents) {
      List<String> parts = new java.util.ArrayList<>();
      for (int i = 0; i < partitionSchema.fields().length; i++) {
        DataType type = partitionSchema.fields()[i].dataType();
        parts.add(partitionSchema.fields()[i].name() + "=" + ident.get(i, type));
      }
      specs.add("(" + String.join(", ", parts) + ")");
    }
    throw new UnsupportedOperationException(
        "stratalake: table "
            + name
            + ": ALTER TABLE ADD PARTITION "
            + String.join(" ", specs)
            + " is not supported: the filesystem catalog keeps no partition list apart from the"
            + " data (Paimon adds partitions only to a metastore that syncs them). A partition"
            + " exists once it holds rows: INSERT INTO the table instead");
  }

  @Override
  public void replacePartitionMetadata(InternalRow ident, Map<String, String> properties) {
    throw new UnsupportedOperationException(
        "stratalake: table " + name + ": partitions have no metadata to replace");
  }

  @Override
  public Map<String, String> loadPartitionMetadata(InternalRow ident) {
    throw new UnsupportedOperationException(
        "stratalake: table " + name + ": partitions have no metadata to load");
  }

  @Override
  public String updateError() {
    return updateError;
  }

  @Override
  public String deleteError() {
    return deleteError;
  }

  @Override
  public List<String> deleteKeyColumns() {
    return systemTable == null ? deleteKeyColumns : null;
  }

  @Override
  public List<String> primaryKeys() {
    return primaryKeys;
  }

  @Override
  public List<String> partitionKeys() {
    return partitionKeys;
  }

  @Override
  public List<String> writeClusterColumns() {
    return writeClusterColumns;
  }

  /**
   * For a dynamic-bucket table whose writers compact every bucket they write: the largest number
   * of assigner slices, at most {@code requested}, under which each bucket takes keys of its
   * owner slice only, so each bucket has one writer (Python reads the table's hash index).
   */
  @Override
  public int ownerConsistentAssigners(int requested) {
    DynamicAssigners req =
        new DynamicAssigners(identity.catalog(), identity.database(), identity.table(), requested);
    return PythonBridge.call(Operation.DYNAMIC_ASSIGNERS, req);
  }

  /**
   * {@code CALL sys.compact(table, 'minor')} as a distributed job: after a write whose tasks added
   * level-0 files to buckets of other assigner slices, this compacts them (with the changelog and
   * deletion vectors a lookup table's compaction produces) in a COMPACT snapshot.
   */
  @Override
  public void compactLevel0() {
    ObjectNode args = PythonBridge.JSON.createObjectNode();
    args.put("table", identity.database() + "." + identity.table());
    args.put("compact_strategy", "minor");
    StrataLakeProcedure.run(identity.catalog(), "compact", null, args);
  }

  /**
   * After a native append write: {@code CALL sys.compact(table, 'minor')} as a distributed job
   * when some bucket holds small files the append compaction would pick (Python's {@code
   * compaction_due}), else nothing.
   */
  @Override
  public void compactIfDue() {
    CompactionDue req =
        new CompactionDue(identity.catalog(), identity.database(), identity.table());
    if (PythonBridge.call(Operation.COMPACTION_DUE, req)) {
      compactLevel0();
    }
  }

  /** Python's answer to how writes must be clustered (bridge_handlers.write_distribution). */
  @Override
  public WriteDistribution writeDistribution() {
    return writeDistribution;
  }

  /** Python's settings for writing this table with Spark's Parquet writer; null when it may not. */
  @Override
  public NativeAppendPlan nativeAppend() {
    // A write that adds columns goes through Python's writer: the native plan was made for the
    // columns the table had when it was loaded.
    return merge != null && merge.changes() ? null : nativeAppend;
  }

  @Override
  public String toString() {
    return "StrataLakeTable(" + name + ")";
  }
}
