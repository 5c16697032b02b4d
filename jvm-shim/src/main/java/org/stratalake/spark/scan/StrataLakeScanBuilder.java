package org.stratalake.spark.scan;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.util.CharVarcharUtils;
import org.apache.spark.sql.connector.expressions.Expression;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.aggregate.AggregateFunc;
import org.apache.spark.sql.connector.expressions.aggregate.Aggregation;
import org.apache.spark.sql.connector.expressions.aggregate.CountStar;
import org.apache.spark.sql.connector.expressions.aggregate.Max;
import org.apache.spark.sql.connector.expressions.aggregate.Min;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.SupportsPushDownAggregates;
import org.apache.spark.sql.connector.read.SupportsPushDownLimit;
import org.apache.spark.sql.connector.read.SupportsPushDownRequiredColumns;
import org.apache.spark.sql.connector.read.SupportsPushDownV2Filters;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;
import org.stratalake.spark.bridge.Json;
import org.stratalake.spark.bridge.Messages.AggregatePartitions;
import org.stratalake.spark.bridge.Messages.ClassifyFilters;
import org.stratalake.spark.bridge.Messages.CountRows;
import org.stratalake.spark.bridge.Messages.PartitionAggregate;
import org.stratalake.spark.bridge.Operation;
import org.stratalake.spark.bridge.PythonBridge;
import org.stratalake.spark.source.LakeTable;

/**
 * Collects what Spark pushes into a stratalake scan. Decisions that need the table's state are
 * made in Python (the planner and COUNT(*)); this class only records and forwards.
 *
 * <ul>
 *   <li>Filters: every translatable predicate goes to the planner for partition/bucket/file
 *       pruning. Python says which ones the scan applies exactly (key and partition predicates,
 *       applied again to rows before the merge); Spark re-evaluates all others after the scan.
 *       It is asked only about filters whose every column may make them exact (a query filtering
 *       a value column keeps its filter in Spark without a round trip).
 *       A limit is only pushed when no filter remains above the scan, and then every row the
 *       reader yields already matches the pushed filters.
 *   <li>Columns: the pruned schema becomes the Python reader's schema; the reader reads those
 *       columns plus what the merge needs.
 *   <li>Limit: partial (each task stops early, Spark limits again).
 *   <li>COUNT(*): answered from file row counts, only when Python says that is exact; so are
 *       COUNT(*), MIN and MAX of partition columns grouped by partition columns.
 * </ul>
 */
public final class StrataLakeScanBuilder
    implements SupportsPushDownV2Filters,
        SupportsPushDownRequiredColumns,
        SupportsPushDownLimit,
        SupportsPushDownAggregates {
  private final LakeTable table;
  private final Map<String, String> sourceOptions;
  private StructType readSchema;
  private final ArrayNode filters = PythonBridge.JSON.createArrayNode();
  private final List<Predicate> pushed = new ArrayList<>();
  private Integer limit;
  private Long count;
  /** COUNT(*) pushed partially: each input partition returns a count, Spark sums them. */
  private boolean partialCount;
  /** A pushed aggregation answered from metadata: its rows and schema (see partitionAggregate). */
  private String aggKey;
  private InternalRow[] aggRows;
  private StructType aggSchema;
  /** The session's native-read switch, read once so classification and planning agree. */
  private final boolean nativeRead;

  public StrataLakeScanBuilder(LakeTable table, Map<String, String> sourceOptions) {
    this.table = table;
    this.sourceOptions = sourceOptions;
    this.readSchema = table.schema();
    this.nativeRead = NativeParquet.enabled(sourceOptions);
  }

  @Override
  public Predicate[] pushPredicates(Predicate[] predicates) {
    List<Predicate> translated = new ArrayList<>();
    List<Predicate> after = new ArrayList<>();
    for (Predicate p : predicates) {
      ObjectNode json = ScanPredicates.toJson(p);
      if (json != null) {
        filters.add(json);
        translated.add(p);
      } else {
        after.add(p);
      }
    }
    pushed.addAll(translated);
    // Python says which of them the scan applies exactly (key and partition predicates): Spark
    // drops those; everything else is evaluated again after the scan. It is only asked about
    // trees that may be exact: a tree with a column outside the ones Python would allow never
    // is (planning.exact_filters), and keeping a filter in Spark's plan is always correct.
    List<JsonNode> trees = Json.elements(filters);
    Set<String> candidates = exactCandidates();
    List<Integer> ask = new ArrayList<>();
    for (int i = 0; i < translated.size(); i++) {
      if (candidates == null || onlyColumns(trees.get(i), candidates)) {
        ask.add(i);
      } else {
        after.add(translated.get(i));
      }
    }
    if (!ask.isEmpty()) {
      List<JsonNode> asked = new ArrayList<>();
      for (int i : ask) {
        asked.add(trees.get(i));
      }
      ClassifyFilters req = new ClassifyFilters(sourceOptions, asked, nativeRead);
      List<Boolean> exact = PythonBridge.call(Operation.CLASSIFY_FILTERS, req);
      for (int j = 0; j < ask.size(); j++) {
        if (!exact.get(j)) {
          after.add(translated.get(ask.get(j)));
        }
      }
    }
    return after.toArray(new Predicate[0]);
  }

  /**
   * The columns a filter the scan applies exactly may name, a superset of what {@code
   * planning.exact_filters} allows: the partition keys for a scan that may read splits natively,
   * else the partition and primary keys. From the data source options the catalog's {@code
   * load_table} wrote (a system table's are its base table's, which Python plans with) and the
   * table's own keys; null (ask about every filter) when the options do not say.
   */
  private Set<String> exactCandidates() {
    String listed =
        sourceOptions.get(nativeRead ? "stratalake.partition-keys" : "stratalake.key-columns");
    if (listed == null) {
      return null;
    }
    Set<String> out = new HashSet<>();
    try {
      for (JsonNode name : PythonBridge.JSON.readTree(listed)) {
        out.add(name.asText());
      }
    } catch (java.io.IOException e) {
      return null;
    }
    out.addAll(table.partitionKeys());
    if (!nativeRead) {
      out.addAll(table.primaryKeys());
    }
    return out;
  }

  /** Whether every leaf of the filter tree names a column, one of {@code columns}. */
  static boolean onlyColumns(JsonNode tree, Set<String> columns) {
    JsonNode children = tree.get("children");
    if (children != null && children.isArray()) {
      for (JsonNode child : children) {
        if (!onlyColumns(child, columns)) {
          return false;
        }
      }
      return children.size() > 0;
    }
    JsonNode column = tree.get("column");
    return column != null && column.isTextual() && columns.contains(column.asText());
  }

  @Override
  public Predicate[] pushedPredicates() {
    return pushed.toArray(new Predicate[0]);
  }

  @Override
  public void pruneColumns(StructType requiredSchema) {
    if (requiredSchema.fields().length > 0) {
      readSchema = requiredSchema;
      return;
    }
    // No column needed (e.g. COUNT(*) that must merge): read the narrowest useful column, a key
    // column, since the merge reads keys anyway. Spark projects it away.
    List<String> keys = table.primaryKeys();
    StructType full = table.schema();
    String name = keys.isEmpty() ? full.fields()[0].name() : keys.get(0);
    readSchema = new StructType(new StructField[] {full.apply(name)});
  }

  @Override
  public boolean pushLimit(int n) {
    limit = n;
    return true;
  }

  @Override
  public boolean isPartiallyPushed() {
    return true;
  }

  private static boolean isCountStar(Aggregation agg) {
    AggregateFunc[] funcs = agg.aggregateExpressions();
    return agg.groupByExpressions().length == 0
        && funcs.length == 1
        && funcs[0] instanceof CountStar;
  }

  /** The table's row count from metadata, if Python says it is exact; null otherwise. */
  private Long metadataCount() {
    if (count == null && filters.isEmpty()) {
      count = PythonBridge.call(Operation.COUNT_ROWS, new CountRows(sourceOptions));
    }
    return count;
  }

  @Override
  public boolean supportCompletePushDown(Aggregation agg) {
    return isCountStar(agg) ? metadataCount() != null : partitionAggregate(agg);
  }

  @Override
  public boolean pushAggregation(Aggregation agg) {
    if (!isCountStar(agg)) {
      return partitionAggregate(agg);
    }
    if (metadataCount() != null) {
      return true;
    }
    // Some split needs a merge: its task merges only keys and returns one count, splits whose
    // live rows metadata knows are summed by the planner, and no row crosses into Spark.
    partialCount = filters.isEmpty() && limit == null;
    return partialCount;
  }

  /** The column a one-name reference names, or null. */
  private static String column(Expression e) {
    if (e instanceof NamedReference && ((NamedReference) e).fieldNames().length == 1) {
      return ((NamedReference) e).fieldNames()[0];
    }
    return null;
  }

  /**
   * COUNT(*), MIN and MAX of partition columns (and MIN and MAX of other columns whose file
   * statistics are exact), grouped by partition columns, answered from file metadata when Python
   * says that is exact (no filter; every split's live rows known; for other columns, no deleted
   * rows). Keeps the answer for {@link #build()}; false (Spark scans) otherwise.
   */
  private boolean partitionAggregate(Aggregation agg) {
    String key =
        java.util.Arrays.toString(agg.aggregateExpressions())
            + java.util.Arrays.toString(agg.groupByExpressions());
    if (key.equals(aggKey)) {
      return aggRows != null;
    }
    aggKey = key;
    aggRows = null;
    if (!filters.isEmpty()) {
      return false;
    }
    List<String> partitionKeys = table.partitionKeys();
    StructType full = CharVarcharUtils.replaceCharVarcharWithStringInSchema(table.schema());
    List<String> groupBy = new ArrayList<>();
    List<PartitionAggregate> aggregates = new ArrayList<>();
    List<StructField> fields = new ArrayList<>();
    for (Expression e : agg.groupByExpressions()) {
      String c = column(e);
      if (c == null || !partitionKeys.contains(c)) {
        return false;
      }
      groupBy.add(c);
      fields.add(full.apply(c));
    }
    for (AggregateFunc f : agg.aggregateExpressions()) {
      if (f instanceof CountStar) {
        aggregates.add(new PartitionAggregate("count", null));
        fields.add(new StructField("count(*)", DataTypes.LongType, false, Metadata.empty()));
        continue;
      }
      String c;
      String fn;
      if (f instanceof Min) {
        c = column(((Min) f).column());
        fn = "min";
      } else if (f instanceof Max) {
        c = column(((Max) f).column());
        fn = "max";
      } else {
        return false;
      }
      // (of a partition column, or of another column from file statistics: Python decides)
      if (c == null || !java.util.Arrays.asList(full.fieldNames()).contains(c)) {
        return false;
      }
      aggregates.add(new PartitionAggregate(fn, c));
      StructField source = full.apply(c);
      fields.add(
          new StructField(fn + "(" + c + ")", source.dataType(), true, Metadata.empty()));
    }
    List<List<JsonNode>> answer =
        PythonBridge.call(
            Operation.AGGREGATE_PARTITIONS,
            new AggregatePartitions(sourceOptions, groupBy, aggregates));
    if (answer == null) {
      return false;
    }
    aggSchema = new StructType(fields.toArray(new StructField[0]));
    List<InternalRow> rows = new ArrayList<>();
    for (List<JsonNode> r : answer) {
      Object[] values = new Object[fields.size()];
      for (int i = 0; i < values.length; i++) {
        values[i] = catalyst(r.get(i), fields.get(i).dataType());
      }
      rows.add(new GenericInternalRow(values));
    }
    aggRows = rows.toArray(new InternalRow[0]);
    return true;
  }

  /** A JSON value from Python as the Catalyst value of {@code type} (dates as epoch days). */
  private static Object catalyst(JsonNode v, DataType type) {
    if (v == null || v.isNull()) {
      return null;
    }
    if (type instanceof StringType) {
      return UTF8String.fromString(v.asText());
    }
    if (type instanceof BooleanType) {
      return v.asBoolean();
    }
    if (type instanceof ByteType) {
      return (byte) v.asInt();
    }
    if (type instanceof ShortType) {
      return (short) v.asInt();
    }
    if (type instanceof IntegerType || type instanceof DateType) {
      return v.asInt();
    }
    if (type instanceof LongType) {
      return v.asLong();
    }
    throw new IllegalStateException("stratalake: no aggregate value of type " + type);
  }

  @Override
  public Scan build() {
    if (count != null) {
      return new CountScan(table.name(), count);
    }
    if (aggRows != null) {
      return new AggregateScan(table.name(), aggSchema, aggRows);
    }
    if (partialCount) {
      return new StrataLakeScan(
          table,
          sourceOptions,
          new StructType().add("count(*)", DataTypes.LongType, false),
          filters,
          "",
          null,
          false,
          new Predicate[0],
          true);
    }
    StringBuilder desc = new StringBuilder();
    for (Predicate p : pushed) {
      desc.append(desc.length() == 0 ? "" : ", ").append(p.describe());
    }
    return new StrataLakeScan(
        table,
        sourceOptions,
        readSchema,
        filters,
        desc.toString(),
        limit,
        nativeRead,
        pushed.toArray(new Predicate[0]),
        false);
  }

  /** COUNT(*) / MIN / MAX of partition columns by partition columns, from file metadata. */
  private static final class AggregateScan implements DriverRows {
    private final String table;
    private final StructType schema;
    private final InternalRow[] rows;

    AggregateScan(String table, StructType schema, InternalRow[] rows) {
      this.table = table;
      this.schema = schema;
      this.rows = rows;
    }

    @Override
    public InternalRow[] rows() {
      return rows;
    }

    @Override
    public StructType readSchema() {
      return schema;
    }

    @Override
    public String description() {
      return "stratalake " + table + " [aggregate from metadata: " + rows.length + " rows]";
    }
  }

  /** COUNT(*) answered from file metadata: one row, no data read. */
  private static final class CountScan implements DriverRows {
    private final String table;
    private final long count;

    CountScan(String table, long count) {
      this.table = table;
      this.count = count;
    }

    @Override
    public InternalRow[] rows() {
      return new InternalRow[] {new GenericInternalRow(new Object[] {count})};
    }

    @Override
    public StructType readSchema() {
      return new StructType().add("count(*)", DataTypes.LongType, false);
    }

    @Override
    public String description() {
      return "stratalake " + table + " [COUNT(*) from metadata: " + count + "]";
    }
  }
}
