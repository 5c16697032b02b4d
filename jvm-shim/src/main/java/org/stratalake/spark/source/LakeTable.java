package org.stratalake.spark.source;

import java.util.List;
import java.util.Map;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.types.StructType;
import org.stratalake.spark.bridge.Messages.NativeAppendPlan;
import org.stratalake.spark.bridge.Messages.WriteDistribution;

/**
 * What scans, writes and the row-level rewrite need of a stratalake table (its name, schema,
 * keys, options and the bridge calls made on its behalf).
 *
 * <p>Why an interface: the catalog's table ({@code catalog.StrataLakeTable}) builds scans and
 * writes, so if they named it the packages would depend on each other in a circle.
 */
public interface LakeTable extends SupportsRead {
  // Row ids of append tables (python/stratalake/append/dml.py), and of DELETEs that remove a
  // key table's stored rows (python/stratalake/table/row_delete.py): the data file's name and
  // the row's position in it, plus the snapshot the scan read.
  String FILE_COLUMN = "__stratalake_file";
  String POS_COLUMN = "__stratalake_pos";
  String SNAPSHOT_COLUMN = "__stratalake_snapshot";

  /** Whether rows are addressed by file and position (an append table, not a system table). */
  boolean isAppendTable();

  /**
   * Whether a DELETE addresses rows by data file and position although the table has a primary
   * key: first-row, partial-update and aggregation tables, whose DELETE removes stored rows.
   */
  boolean deletesByPosition();

  /** Why UPDATE and MERGE are refused on this table; null when they are allowed. */
  String updateError();

  /** Why DELETE is refused on this table; null when it is allowed. */
  String deleteError();

  /**
   * The key columns a DELETE by a key list ({@code WHERE (k, ...) IN (SELECT ...)}) must name
   * for the table to check the listed keys itself instead of Spark scanning every stored key;
   * null when it cannot (Python's {@code dml.delete_key_columns}).
   */
  List<String> deleteKeyColumns();

  List<String> primaryKeys();

  List<String> partitionKeys();

  List<String> writeClusterColumns();

  /** Python's answer to how writes must be clustered (bridge_handlers.write_distribution). */
  WriteDistribution writeDistribution();

  /** Python's settings for writing this table with Spark's Parquet writer; null when it may not. */
  NativeAppendPlan nativeAppend();

  /** A query's options under the catalog's source options (which win, whatever their case). */
  Map<String, String> withSourceOptions(Map<String, String> userOptions);

  /**
   * For a dynamic-bucket table whose writers compact every bucket they write: the largest number
   * of assigner slices, at most {@code requested}, under which each bucket has one writer.
   */
  int ownerConsistentAssigners(int requested);

  /** {@code CALL sys.compact(table, 'minor')} as a distributed job. */
  void compactLevel0();

  /** After a native append write: a minor compaction when some bucket is due one, else nothing. */
  void compactIfDue();

  /**
   * Commits a row-level statement by position from its write tasks' pickled messages (base64),
   * running the job that rewrites copy-on-write files first when Python asks for one.
   */
  void commitRowLevel(List<String> messages);

  // ---- write-time schema evolution (write.merge-schema; sql.MergeSchemaWrites) ----

  /**
   * This table taking writes of any columns (Spark's ACCEPT_ANY_SCHEMA), for a write that evolves
   * its schema: Spark then leaves the write's columns to the shim's analyzer rule.
   */
  LakeTable acceptingAnySchema();

  /** Whether this is {@link #acceptingAnySchema()}'s table and its write is not planned yet. */
  boolean awaitsSchemaMerge();

  /**
   * The table as it will be once it takes rows of {@code data}: Python decides its schema now and
   * commits it when the write starts ({@link #commitSchemaMerge()}), before any data.
   */
  LakeTable withSchemaMerge(
      StructType data, boolean typeWidening, boolean explicitCast, boolean caseSensitive);

  /** Commits the schema {@link #withSchemaMerge} planned; nothing when there is none. */
  void commitSchemaMerge();
}
