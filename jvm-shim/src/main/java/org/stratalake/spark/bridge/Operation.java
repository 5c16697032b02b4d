package org.stratalake.spark.bridge;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.JsonNode;
import java.lang.reflect.Type;
import java.util.List;
import java.util.Map;
import org.stratalake.spark.bridge.Messages.AggregatePartitions;
import org.stratalake.spark.bridge.Messages.AlterTable;
import org.stratalake.spark.bridge.Messages.CallProcedure;
import org.stratalake.spark.bridge.Messages.CanDeleteWhere;
import org.stratalake.spark.bridge.Messages.ChangesPlan;
import org.stratalake.spark.bridge.Messages.ClassifyFilters;
import org.stratalake.spark.bridge.Messages.CompactionDue;
import org.stratalake.spark.bridge.Messages.CountRows;
import org.stratalake.spark.bridge.Messages.CreateDatabase;
import org.stratalake.spark.bridge.Messages.CreateTable;
import org.stratalake.spark.bridge.Messages.DatabaseExists;
import org.stratalake.spark.bridge.Messages.JobAnswer;
import org.stratalake.spark.bridge.Messages.DeleteWhere;
import org.stratalake.spark.bridge.Messages.DescribeProcedure;
import org.stratalake.spark.bridge.Messages.DropDatabase;
import org.stratalake.spark.bridge.Messages.DropPartitions;
import org.stratalake.spark.bridge.Messages.DropTable;
import org.stratalake.spark.bridge.Messages.DynamicAssigners;
import org.stratalake.spark.bridge.Messages.ListDatabases;
import org.stratalake.spark.bridge.Messages.ListPartitions;
import org.stratalake.spark.bridge.Messages.ListProcedures;
import org.stratalake.spark.bridge.Messages.ListTables;
import org.stratalake.spark.bridge.Messages.LoadDatabase;
import org.stratalake.spark.bridge.Messages.LoadTable;
import org.stratalake.spark.bridge.Messages.PlanChanges;
import org.stratalake.spark.bridge.Messages.MergeSchema;
import org.stratalake.spark.bridge.Messages.PlanScan;
import org.stratalake.spark.bridge.Messages.ProcedureAnswer;
import org.stratalake.spark.bridge.Messages.ProcedureSpec;
import org.stratalake.spark.bridge.Messages.KeepAlive;
import org.stratalake.spark.bridge.Messages.ReadSystemTable;
import org.stratalake.spark.bridge.Messages.RenameTable;
import org.stratalake.spark.bridge.Messages.RowLevelCommit;
import org.stratalake.spark.bridge.Messages.ScanPlan;
import org.stratalake.spark.bridge.Messages.StageTable;
import org.stratalake.spark.bridge.Messages.StagedTable;
import org.stratalake.spark.bridge.Messages.TableDescription;
import org.stratalake.spark.bridge.Messages.TableExists;

/**
 * One bridge operation: its name, its request record and the type of its reply. The list is
 * Python's {@code bridge_contract.OPERATIONS}; {@link BridgeContract#describe()} renders it.
 *
 * @param <Q> the request record
 * @param <R> the reply (a record, a boxed value, a list or map of them; Void: no reply)
 */
public final class Operation<Q extends Record, R> {
  public static final Operation<ListDatabases, List<String>> LIST_DATABASES =
      new Operation<>("list_databases", ListDatabases.class, new TypeReference<>() {}, false);
  public static final Operation<DatabaseExists, Boolean> DATABASE_EXISTS =
      new Operation<>("database_exists", DatabaseExists.class, new TypeReference<>() {}, false);
  public static final Operation<LoadDatabase, Map<String, String>> LOAD_DATABASE =
      new Operation<>("load_database", LoadDatabase.class, new TypeReference<>() {}, false);
  public static final Operation<CreateDatabase, Void> CREATE_DATABASE =
      new Operation<>("create_database", CreateDatabase.class, new TypeReference<>() {}, false);
  public static final Operation<DropDatabase, Boolean> DROP_DATABASE =
      new Operation<>("drop_database", DropDatabase.class, new TypeReference<>() {}, false);
  public static final Operation<ListTables, List<String>> LIST_TABLES =
      new Operation<>("list_tables", ListTables.class, new TypeReference<>() {}, false);
  public static final Operation<TableExists, Boolean> TABLE_EXISTS =
      new Operation<>("table_exists", TableExists.class, new TypeReference<>() {}, false);
  public static final Operation<LoadTable, TableDescription> LOAD_TABLE =
      new Operation<>("load_table", LoadTable.class, new TypeReference<>() {}, false);
  public static final Operation<CreateTable, TableDescription> CREATE_TABLE =
      new Operation<>("create_table", CreateTable.class, new TypeReference<>() {}, false);
  public static final Operation<StageTable, StagedTable> STAGE_TABLE =
      new Operation<>("stage_table", StageTable.class, new TypeReference<>() {}, false);
  public static final Operation<AlterTable, TableDescription> ALTER_TABLE =
      new Operation<>("alter_table", AlterTable.class, new TypeReference<>() {}, false);
  public static final Operation<DropTable, Boolean> DROP_TABLE =
      new Operation<>("drop_table", DropTable.class, new TypeReference<>() {}, false);
  public static final Operation<RenameTable, Void> RENAME_TABLE =
      new Operation<>("rename_table", RenameTable.class, new TypeReference<>() {}, false);
  public static final Operation<CanDeleteWhere, Boolean> CAN_DELETE_WHERE =
      new Operation<>("can_delete_where", CanDeleteWhere.class, new TypeReference<>() {}, false);
  public static final Operation<DeleteWhere, JobAnswer> DELETE_WHERE =
      new Operation<>("delete_where", DeleteWhere.class, new TypeReference<>() {}, false);
  public static final Operation<RowLevelCommit, JobAnswer> ROW_LEVEL_COMMIT =
      new Operation<>("row_level_commit", RowLevelCommit.class, new TypeReference<>() {}, false);
  public static final Operation<ListProcedures, List<String>> LIST_PROCEDURES =
      new Operation<>("list_procedures", ListProcedures.class, new TypeReference<>() {}, false);
  public static final Operation<DescribeProcedure, ProcedureSpec> DESCRIBE_PROCEDURE =
      new Operation<>(
          "describe_procedure", DescribeProcedure.class, new TypeReference<>() {}, false);
  public static final Operation<CallProcedure, ProcedureAnswer> CALL_PROCEDURE =
      new Operation<>("call_procedure", CallProcedure.class, new TypeReference<>() {}, false);
  public static final Operation<PlanScan, ScanPlan> PLAN_SCAN =
      new Operation<>("plan_scan", PlanScan.class, new TypeReference<>() {}, false);
  public static final Operation<CountRows, Long> COUNT_ROWS =
      new Operation<>("count_rows", CountRows.class, new TypeReference<>() {}, true);
  public static final Operation<ClassifyFilters, List<Boolean>> CLASSIFY_FILTERS =
      new Operation<>("classify_filters", ClassifyFilters.class, new TypeReference<>() {}, false);
  public static final Operation<AggregatePartitions, List<List<JsonNode>>> AGGREGATE_PARTITIONS =
      new Operation<>(
          "aggregate_partitions", AggregatePartitions.class, new TypeReference<>() {}, true);
  public static final Operation<DynamicAssigners, Integer> DYNAMIC_ASSIGNERS =
      new Operation<>("dynamic_assigners", DynamicAssigners.class, new TypeReference<>() {}, false);
  public static final Operation<CompactionDue, Boolean> COMPACTION_DUE =
      new Operation<>("compaction_due", CompactionDue.class, new TypeReference<>() {}, false);
  public static final Operation<ListPartitions, List<List<JsonNode>>> LIST_PARTITIONS =
      new Operation<>("list_partitions", ListPartitions.class, new TypeReference<>() {}, false);
  public static final Operation<DropPartitions, Long> DROP_PARTITIONS =
      new Operation<>("drop_partitions", DropPartitions.class, new TypeReference<>() {}, true);
  public static final Operation<PlanChanges, ChangesPlan> PLAN_CHANGES =
      new Operation<>("plan_changes", PlanChanges.class, new TypeReference<>() {}, true);
  public static final Operation<MergeSchema, JsonNode> MERGE_SCHEMA =
      new Operation<>("merge_schema", MergeSchema.class, new TypeReference<>() {}, false);
  public static final Operation<ReadSystemTable, String> READ_SYSTEM_TABLE =
      new Operation<>(
          "read_system_table", ReadSystemTable.class, new TypeReference<>() {}, true);
  public static final Operation<KeepAlive, Long> KEEP_ALIVE =
      new Operation<>("keep_alive", KeepAlive.class, new TypeReference<>() {}, false);

  /** Every operation, in Python's order. */
  public static final List<Operation<?, ?>> ALL =
      List.of(
          LIST_DATABASES,
          DATABASE_EXISTS,
          LOAD_DATABASE,
          CREATE_DATABASE,
          DROP_DATABASE,
          LIST_TABLES,
          TABLE_EXISTS,
          LOAD_TABLE,
          CREATE_TABLE,
          STAGE_TABLE,
          ALTER_TABLE,
          DROP_TABLE,
          RENAME_TABLE,
          CAN_DELETE_WHERE,
          DELETE_WHERE,
          ROW_LEVEL_COMMIT,
          LIST_PROCEDURES,
          DESCRIBE_PROCEDURE,
          CALL_PROCEDURE,
          PLAN_SCAN,
          COUNT_ROWS,
          CLASSIFY_FILTERS,
          AGGREGATE_PARTITIONS,
          DYNAMIC_ASSIGNERS,
          COMPACTION_DUE,
          LIST_PARTITIONS,
          DROP_PARTITIONS,
          PLAN_CHANGES,
          MERGE_SCHEMA,
          READ_SYSTEM_TABLE,
          KEEP_ALIVE);

  private final String name;
  private final Class<Q> request;
  private final TypeReference<R> reply;
  private final boolean nullableReply;

  private Operation(
      String name, Class<Q> request, TypeReference<R> reply, boolean nullableReply) {
    this.name = name;
    this.request = request;
    this.reply = reply;
    this.nullableReply = nullableReply;
  }

  public String name() {
    return name;
  }

  public Class<Q> request() {
    return request;
  }

  TypeReference<R> replyType() {
    return reply;
  }

  Type reply() {
    return reply.getType();
  }

  /** Whether the reply may be null (Python: {@code T | None}). */
  boolean nullableReply() {
    return nullableReply;
  }
}
