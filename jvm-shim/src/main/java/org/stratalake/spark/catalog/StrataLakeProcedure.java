package org.stratalake.spark.catalog;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.NullNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collections;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.connector.catalog.procedures.BoundProcedure;
import org.apache.spark.sql.connector.catalog.procedures.ProcedureParameter;
import org.apache.spark.sql.connector.catalog.procedures.UnboundProcedure;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;
import org.stratalake.spark.bridge.Messages.CallProcedure;
import org.stratalake.spark.bridge.Messages.CatalogConf;
import org.stratalake.spark.bridge.Messages.ProcedureAnswer;
import org.stratalake.spark.bridge.Messages.ProcedureJob;
import org.stratalake.spark.bridge.Messages.ProcedureSpec;
import org.stratalake.spark.bridge.Messages;
import org.stratalake.spark.bridge.Operation;
import org.stratalake.spark.bridge.PythonBridge;
import org.stratalake.spark.scan.DriverRows;
import org.stratalake.spark.source.LakeSource;

/**
 * A {@code CALL lake.sys.<name>(...)} procedure defined in Python
 * ({@code stratalake.spark.procedures}): parameters and result columns come from Python, and so
 * does the work. This class converts arguments and result rows only.
 *
 * <p>A procedure that needs a distributed job (compact) answers with the data source options of
 * the job instead of rows: the job runs as a Spark read of the Python source (tasks planned on the
 * driver, run one per Spark task, each returning a pickled commit message), and the collected
 * messages go back to Python, which commits them once.
 */
public final class StrataLakeProcedure implements UnboundProcedure, BoundProcedure {
  private final SparkCatalog catalog;
  private final String name;
  private final ProcedureSpec spec;

  StrataLakeProcedure(SparkCatalog catalog, String name, ProcedureSpec spec) {
    this.catalog = catalog;
    this.name = name;
    this.spec = spec;
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public String description() {
    return spec.description() == null ? name : spec.description();
  }

  @Override
  public BoundProcedure bind(StructType inputType) {
    return this;
  }

  @Override
  public boolean isDeterministic() {
    return false;
  }

  @Override
  public ProcedureParameter[] parameters() {
    List<Messages.ProcedureParameter> params = spec.parameters();
    ProcedureParameter[] out = new ProcedureParameter[params.size()];
    for (int i = 0; i < out.length; i++) {
      Messages.ProcedureParameter p = params.get(i);
      ProcedureParameter.Builder b = ProcedureParameter.in(p.name(), DataType.fromDDL(p.type()));
      if (!p.required()) {
        b = b.defaultValue("NULL"); // Python applies the real default
      }
      out[i] = b.build();
    }
    return out;
  }

  @Override
  public Iterator<Scan> call(InternalRow input) {
    ProcedureParameter[] params = parameters();
    ObjectNode args = PythonBridge.JSON.createObjectNode();
    for (int i = 0; i < params.length; i++) {
      putArg(args, params[i].name(), params[i].dataType(), input, i);
    }
    ProcedureAnswer answer = run(catalog.conf(), name, currentDatabase(), args);
    StructType schema = (StructType) DataType.fromJson(answer.schema().toString());
    List<InternalRow> rows = new ArrayList<>();
    for (List<JsonNode> row : answer.rows()) {
      Object[] values = new Object[schema.fields().length];
      for (int i = 0; i < values.length; i++) {
        values[i] = internal(row.get(i), schema.fields()[i].dataType());
      }
      rows.add(new GenericInternalRow(values));
    }
    Scan scan = new Result(schema, rows.toArray(new InternalRow[0]));
    return Collections.singletonList(scan).iterator();
  }

  /**
   * The database a bare table name in an argument ({@code table => 'T'}) lives in: the session's
   * current one after {@code USE lake.db}, as Paimon resolves procedure arguments against the
   * current catalog and namespace; the catalog's default database when another catalog is current.
   */
  private String currentDatabase() {
    org.apache.spark.sql.connector.catalog.CatalogManager manager =
        org.apache.spark.sql.classic.SparkSession$.MODULE$.active().sessionState().catalogManager();
    String[] namespace = manager.currentNamespace();
    if (manager.currentCatalog().name().equals(catalog.name()) && namespace.length == 1) {
      return namespace[0];
    }
    return catalog.defaultNamespace()[0];
  }

  /**
   * Calls procedure {@code name} of catalog {@code conf} with {@code args} (bare table names are
   * of {@code currentDatabase}; null: the catalog's default), running the Spark jobs it asks for;
   * returns Python's final answer (schema and rows).
   */
  static ProcedureAnswer run(
      CatalogConf conf, String name, String currentDatabase, ObjectNode args) {
    Map<String, JsonNode> argMap = new LinkedHashMap<>();
    args.properties().forEach(e -> argMap.put(e.getKey(), e.getValue()));
    ProcedureAnswer answer =
        PythonBridge.call(
            Operation.CALL_PROCEDURE,
            new CallProcedure(
                conf, name, currentDatabase, argMap, NullNode.getInstance(), null, false));
    while (answer.job() != null) {
      List<String> results;
      try {
        results = runJob(answer.job());
      } catch (Throwable e) { // a failed job is a SparkException, which Java does not declare
        // Nothing was committed: Python deletes what the job's task attempts wrote.
        try {
          PythonBridge.call(
              Operation.CALL_PROCEDURE,
              new CallProcedure(
                  conf, name, currentDatabase, argMap, answer.state(), null, true));
        } catch (RuntimeException cleanup) {
          e.addSuppressed(cleanup);
        }
        throw org.stratalake.spark.bridge.Errors.sneaky(e);
      }
      answer =
          PythonBridge.call(
              Operation.CALL_PROCEDURE,
              new CallProcedure(
                  conf, name, currentDatabase, argMap, answer.state(), results, false));
    }
    return answer;
  }

  /**
   * Runs the job Python described; returns each task's binary result, base64-encoded. A failed
   * job's error comes once its tasks have ended ({@link JobTasks}).
   */
  static List<String> runJob(ProcedureJob job) {
    SparkSession spark = SparkSession.active();
    List<Row> results =
        JobTasks.run(
            spark.sparkContext(),
            () ->
                spark.read().format(LakeSource.SOURCE_NAME).schema("result BINARY")
                    .options(job.options()).load().collectAsList());
    List<String> out = new ArrayList<>();
    for (Row r : results) {
      out.add(Base64.getEncoder().encodeToString((byte[]) r.get(0)));
    }
    return out;
  }

  private static void putArg(ObjectNode args, String key, DataType type, InternalRow in, int i) {
    if (in.isNullAt(i)) {
      args.putNull(key);
    } else if (type.equals(DataTypes.StringType)) {
      args.put(key, in.getUTF8String(i).toString());
    } else if (type.equals(DataTypes.IntegerType)) {
      args.put(key, in.getInt(i));
    } else if (type.equals(DataTypes.LongType)) {
      args.put(key, in.getLong(i));
    } else if (type.equals(DataTypes.BooleanType)) {
      args.put(key, in.getBoolean(i));
    } else {
      throw new IllegalArgumentException("stratalake: unsupported procedure argument type " + type);
    }
  }

  private static Object internal(JsonNode v, DataType type) {
    if (v == null || v.isNull()) {
      return null;
    }
    if (type.equals(DataTypes.StringType)) {
      return UTF8String.fromString(v.asText());
    }
    if (type.equals(DataTypes.IntegerType)) {
      return v.asInt();
    }
    if (type.equals(DataTypes.LongType)) {
      return v.asLong();
    }
    if (type.equals(DataTypes.BooleanType)) {
      return v.asBoolean();
    }
    throw new IllegalArgumentException("stratalake: unsupported procedure result type " + type);
  }

  private static final class Result implements DriverRows {
    private final StructType schema;
    private final InternalRow[] rows;

    Result(StructType schema, InternalRow[] rows) {
      this.schema = schema;
      this.rows = rows;
    }

    @Override
    public StructType readSchema() {
      return schema;
    }

    @Override
    public InternalRow[] rows() {
      return rows;
    }
  }
}
