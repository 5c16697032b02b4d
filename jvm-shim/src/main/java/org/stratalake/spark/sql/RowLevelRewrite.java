package org.stratalake.spark.sql;

import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.catalyst.ProjectingInternalRow;
import org.apache.spark.sql.catalyst.expressions.Alias$;
import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.expressions.And;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.CaseWhen;
import org.apache.spark.sql.catalyst.expressions.CreateMap;
import org.apache.spark.sql.catalyst.expressions.EqualNullSafe;
import org.apache.spark.sql.catalyst.expressions.EqualTo;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.If;
import org.apache.spark.sql.catalyst.expressions.InSubquery;
import org.apache.spark.sql.catalyst.expressions.IsNotNull;
import org.apache.spark.sql.catalyst.expressions.ListQuery;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.expressions.Not;
import org.apache.spark.sql.catalyst.expressions.RaiseError;
import org.apache.spark.sql.catalyst.plans.logical.AppendData;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.catalyst.plans.logical.WriteDelta;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.catalyst.util.RowDeltaUtils$;
import org.apache.spark.sql.catalyst.util.WriteDeltaProjections;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.RowLevelOperation;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation$;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.stratalake.spark.bridge.PythonBridge;
import org.stratalake.spark.bridge.StrataLakeException;
import org.stratalake.spark.source.LakeTable;
import org.stratalake.spark.write.StrataLakeWriteBuilder;
import scala.Option;
import scala.Tuple2;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Turns Spark's {@code WriteDelta} for a stratalake table into an append of change records.
 *
 * <p>Why: Spark would hand a delta write row by row to a Java {@code DeltaWriter}, but the table
 * format lives in Python. Instead, just before Spark asks for the delta writer (the pre-CBO
 * phase), the plan becomes {@code AppendData} into a {@link ChangeSink}: the table's columns plus a
 * row-kind column ('-D' / '+U' / '+I') computed from Spark's {@code __row_operation}. The Python
 * writer writes those records with their row kinds and commits once: one snapshot per statement.
 * The rewrite is purely structural; which statements a table accepts was decided in Python.
 */
public final class RowLevelRewrite extends Rule<LogicalPlan> {
  static final String ROW_KIND_COLUMN = "_row_kind";

  @Override
  public LogicalPlan apply(LogicalPlan plan) {
    // Row-level commands are always the root of their plan.
    if (!(plan instanceof WriteDelta)) {
      return plan;
    }
    WriteDelta delta = (WriteDelta) plan;
    // delta.table() wraps the operation; the original relation holds the catalog's table.
    if (!(delta.originalTable() instanceof DataSourceV2Relation)) {
      return plan;
    }
    DataSourceV2Relation relation = (DataSourceV2Relation) delta.originalTable();
    if (!(relation.table() instanceof LakeTable)) {
      return plan;
    }
    LakeTable table = (LakeTable) relation.table();
    RowLevelOperation.Command command = delta.operation().command();
    if (command == RowLevelOperation.Command.DELETE && table.deleteError() != null) {
      throw new StrataLakeException("UnsupportedError", table.deleteError());
    }
    if (command == RowLevelOperation.Command.DELETE) {
      LogicalPlan listed = keyListDelete(delta, relation, table);
      if (listed != null) {
        return listed;
      }
    }
    return rewrite(delta, relation, table);
  }

  /**
   * {@code DELETE FROM t WHERE (k, ...) IN (SELECT ...)} on a table that checks listed keys
   * itself ({@link LakeTable#deleteKeyColumns}): the listed keys go to the table's writer as
   * {@code -D} candidates, of which it keeps the live ones (key_delete.py), instead of Spark
   * joining every stored key with the list. Null for any other condition: a correlated list, a
   * key the list computes from a column (a cast), or one that is not a primary-key column.
   */
  private static LogicalPlan keyListDelete(
      WriteDelta delta, DataSourceV2Relation relation, LakeTable table) {
    List<String> required = table.deleteKeyColumns();
    if (required == null || !(delta.condition() instanceof InSubquery)) {
      return null;
    }
    InSubquery in = (InSubquery) delta.condition();
    ListQuery list = in.query();
    if (!list.outerAttrs().isEmpty()) {
      return null;
    }
    LogicalPlan keys = list.plan();
    List<Expression> values = CollectionConverters.asJava(in.values());
    List<Attribute> listed = CollectionConverters.asJava(keys.output());
    if (values.size() != listed.size()) {
      return null;
    }
    // Table column (the schema's spelling) -> the key list's column.
    Map<String, Attribute> given = new HashMap<>();
    for (int i = 0; i < values.size(); i++) {
      if (!(values.get(i) instanceof AttributeReference)) {
        return null;
      }
      AttributeReference column = (AttributeReference) values.get(i);
      StructField field = field(table.schema(), column.name());
      if (!relation.outputSet().contains(column)
          || field == null
          || !containsIgnoreCase(table.primaryKeys(), field.name())
          || given.containsKey(field.name())
          || !field.dataType().sameType(listed.get(i).dataType())) {
        return null;
      }
      given.put(field.name(), listed.get(i));
    }
    for (String column : required) {
      if (field(table.schema(), column) == null || !given.containsKey(field(table.schema(), column).name())) {
        return null;
      }
    }
    // A null in the list matches nothing (SQL's IN).
    Expression notNull = null;
    for (Attribute a : given.values()) {
      Expression check = new IsNotNull(a);
      notNull = notNull == null ? check : new And(notNull, check);
    }
    List<NamedExpression> projection = new ArrayList<>();
    projection.add(alias(Literal.create("-D", DataTypes.StringType), ROW_KIND_COLUMN));
    List<StructField> sinkFields = new ArrayList<>();
    sinkFields.add(DataTypes.createStructField(ROW_KIND_COLUMN, DataTypes.StringType, false));
    List<String> names = new ArrayList<>();
    for (StructField f : table.schema().fields()) {
      Attribute key = given.get(f.name());
      projection.add(alias(key != null ? key : Literal.create(null, f.dataType()), f.name()));
      sinkFields.add(DataTypes.createStructField(f.name(), f.dataType(), true));
      if (key != null) {
        names.add(f.name());
      }
    }
    String columns;
    try {
      columns = PythonBridge.JSON.writeValueAsString(names);
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
    Project candidates =
        new Project(CollectionConverters.asScala(projection).toSeq(), new Filter(notNull, keys));
    ChangeSink sink = new ChangeSink(table, DataTypes.createStructType(sinkFields), columns);
    return append(sink, relation, candidates);
  }

  private static StructField field(StructType schema, String name) {
    for (StructField f : schema.fields()) {
      if (f.name().equalsIgnoreCase(name)) {
        return f;
      }
    }
    return null;
  }

  private static boolean containsIgnoreCase(List<String> names, String name) {
    return names.stream().anyMatch(n -> n.equalsIgnoreCase(name));
  }

  private static AppendData append(ChangeSink sink, DataSourceV2Relation relation, LogicalPlan query) {
    DataSourceV2Relation sinkRelation = DataSourceV2Relation$.MODULE$.create(
        sink, relation.catalog(), relation.identifier(), CaseInsensitiveStringMap.empty(),
        Option.empty());
    return new AppendData(
        sinkRelation,
        query,
        scala.collection.immutable.Map$.MODULE$.<String, String>empty(),
        false,
        false,
        Option.empty(),
        Option.empty());
  }

  private static LogicalPlan rewrite(
      WriteDelta delta, DataSourceV2Relation relation, LakeTable table) {
    LogicalPlan query = delta.query();
    List<Attribute> output = new ArrayList<>(CollectionConverters.asJava(query.output()));
    // Spark keeps the old key beside the new one when a statement assigns a key column (also
    // for "SET *", which assigns it its own value): checked per row below.
    String originalPrefix = RowDeltaUtils$.MODULE$.ORIGINAL_ROW_ID_VALUE_PREFIX();
    Map<String, Attribute> originals = new HashMap<>();
    for (Attribute a : output) {
      if (a.name().startsWith(originalPrefix)) {
        originals.put(a.name().substring(originalPrefix.length()), a);
      }
    }
    Attribute operation = find(output, RowDeltaUtils$.MODULE$.OPERATION_COLUMN());
    WriteDeltaProjections projections = delta.projections();
    Map<String, Attribute> rowIds = columns(projections.rowIdProjection(), output);
    Map<String, Attribute> rows =
        projections.rowProjection().isDefined()
            ? columns(projections.rowProjection().get(), output)
            : new HashMap<>();

    Expression isDelete = new EqualTo(operation, Literal.create(
        RowDeltaUtils$.MODULE$.DELETE_OPERATION(), DataTypes.IntegerType));
    Expression isUpdate = new EqualTo(operation, Literal.create(
        RowDeltaUtils$.MODULE$.UPDATE_OPERATION(), DataTypes.IntegerType));
    List<Tuple2<Expression, Expression>> branches = new ArrayList<>();
    branches.add(new Tuple2<>(isDelete, Literal.create("-D", DataTypes.StringType)));
    branches.add(new Tuple2<>(isUpdate, Literal.create("+U", DataTypes.StringType)));
    // INSERT and REINSERT rows are inserts.
    Expression rowKind = new CaseWhen(
        CollectionConverters.asScala(branches).toSeq(),
        Option.apply(Literal.create("+I", DataTypes.StringType)));

    List<NamedExpression> projection = new ArrayList<>();
    projection.add(alias(rowKind, ROW_KIND_COLUMN));
    List<StructField> sinkFields = new ArrayList<>();
    sinkFields.add(DataTypes.createStructField(ROW_KIND_COLUMN, DataTypes.StringType, false));
    for (StructField f : table.schema().fields()) {
      Attribute row = rows.get(f.name());
      Attribute id = rowIds.get(f.name());
      Expression value;
      if (id != null && row != null) {
        // Deleted rows carry their key in the row id; inserted rows only in the row.
        value = new If(isDelete, id, row);
      } else if (id != null) {
        value = id; // DELETE: only the key is known; the writer takes the rest as null
      } else if (row != null) {
        value = row;
      } else {
        value = Literal.create(null, f.dataType());
      }
      Attribute original = originals.get(f.name());
      if (original != null && row != null) {
        Expression changed = new And(isUpdate, new Not(new EqualNullSafe(original, row)));
        value = new If(changed, keyChangeError(table, f), value);
      }
      projection.add(alias(value, f.name()));
      sinkFields.add(DataTypes.createStructField(f.name(), f.dataType(), true));
    }
    if (rowIds.containsKey(LakeTable.FILE_COLUMN)) {
      // Deleted rows are addressed by file and position, read at one snapshot (append_dml.py;
      // a key table's DELETE of stored rows: row_delete.py).
      Map<String, Attribute> metadata =
          projections.metadataProjection().isDefined()
              ? columns(projections.metadataProjection().get(), output)
              : new HashMap<>();
      addRowId(projection, sinkFields, rowIds.get(LakeTable.FILE_COLUMN), LakeTable.FILE_COLUMN, DataTypes.StringType);
      addRowId(projection, sinkFields, rowIds.get(LakeTable.POS_COLUMN), LakeTable.POS_COLUMN, DataTypes.LongType);
      addRowId(projection, sinkFields, metadata.get(LakeTable.SNAPSHOT_COLUMN), LakeTable.SNAPSHOT_COLUMN, DataTypes.LongType);
    }
    Project changes = new Project(CollectionConverters.asScala(projection).toSeq(), query);
    ChangeSink sink = new ChangeSink(table, DataTypes.createStructType(sinkFields), null);
    return append(sink, relation, changes);
  }

  private static void addRowId(
      List<NamedExpression> projection,
      List<StructField> sinkFields,
      Attribute source,
      String name,
      org.apache.spark.sql.types.DataType type) {
    Expression value = source != null ? source : Literal.create(null, type);
    projection.add(alias(value, name));
    sinkFields.add(DataTypes.createStructField(name, type, true));
  }

  /** Fails the task: an UPDATE may not move a row to another key (or partition). */
  private static Expression keyChangeError(LakeTable table, StructField column) {
    String message = "[STRATALAKE:UnsupportedError] table " + table.name()
        + ": UPDATE / MERGE cannot change primary-key column '" + column.name()
        + "' (primary keys " + table.primaryKeys() + ", partition keys " + table.partitionKeys()
        + "); delete the row and insert the new one instead";
    List<Expression> params = new ArrayList<>();
    params.add(Literal.create("errorMessage", DataTypes.StringType));
    params.add(Literal.create(message, DataTypes.StringType));
    // The three-argument form states the result type: no type coercion runs after analysis.
    return new RaiseError(
        Literal.create("USER_RAISED_EXCEPTION", DataTypes.StringType),
        new CreateMap(CollectionConverters.asScala(params).toSeq(), false),
        column.dataType());
  }

  private static NamedExpression alias(Expression child, String name) {
    return new Alias(
        child,
        name,
        Alias$.MODULE$.apply$default$3(child, name),
        Alias$.MODULE$.apply$default$4(child, name),
        Alias$.MODULE$.apply$default$5(child, name),
        Alias$.MODULE$.apply$default$6(child, name));
  }

  private static Attribute find(List<Attribute> output, String name) {
    for (Attribute a : output) {
      if (a.name().equals(name)) {
        return a;
      }
    }
    throw new IllegalStateException("stratalake: row-level plan lacks column " + name);
  }

  /** Table column name -> the query attribute a WriteDelta projection reads it from. */
  private static Map<String, Attribute> columns(ProjectingInternalRow p, List<Attribute> output) {
    Map<String, Attribute> out = new HashMap<>();
    StructField[] fields = p.schema().fields();
    List<Object> ordinals = CollectionConverters.asJava(p.colOrdinals());
    for (int i = 0; i < fields.length; i++) {
      out.put(fields[i].name(), output.get((Integer) ordinals.get(i)));
    }
    return out;
  }

  /**
   * Write-only relation of change records for one table: its writer is the table's own write
   * builder (same clustering by partition and bucket key, same Python writer) with the row-kind
   * column named in the options.
   */
  static final class ChangeSink implements Table, SupportsWrite {
    private final LakeTable table;
    private final StructType schema;
    private final String deleteKeys; // a DELETE by a key list: its key columns (JSON); else null

    ChangeSink(LakeTable table, StructType schema, String deleteKeys) {
      this.table = table;
      this.schema = schema;
      this.deleteKeys = deleteKeys;
    }

    @Override
    public String name() {
      return table.name();
    }

    @Override
    @SuppressWarnings("deprecation")
    public StructType schema() {
      return schema;
    }

    @Override
    public Set<TableCapability> capabilities() {
      return EnumSet.of(TableCapability.BATCH_WRITE);
    }

    @Override
    public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
      Map<String, String> options = new HashMap<>(info.options().asCaseSensitiveMap());
      options.put(StrataLakeWriteBuilder.ROW_KIND_OPTION, ROW_KIND_COLUMN);
      if (deleteKeys != null) {
        options.put(StrataLakeWriteBuilder.DELETE_KEYS_OPTION, deleteKeys);
      }
      return new StrataLakeWriteBuilder(table, new StrataLakeWriteBuilder.WriteInfo(info, new CaseInsensitiveStringMap(options)));
    }
  }
}
