package org.stratalake.spark.catalog;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.catalyst.analysis.NoSuchFunctionException;
import org.apache.spark.sql.catalyst.analysis.NoSuchNamespaceException;
import org.apache.spark.sql.catalyst.analysis.NoSuchTableException;
import org.apache.spark.sql.catalyst.analysis.TableAlreadyExistsException;
import org.apache.spark.sql.connector.catalog.Column;
import org.apache.spark.sql.connector.catalog.FunctionCatalog;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.NamespaceChange;
import org.apache.spark.sql.connector.catalog.ProcedureCatalog;
import org.apache.spark.sql.connector.catalog.StagedTable;
import org.apache.spark.sql.connector.catalog.StagingTableCatalog;
import org.apache.spark.sql.connector.catalog.SupportsNamespaces;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCatalog;
import org.apache.spark.sql.connector.catalog.TableCatalogCapability;
import org.apache.spark.sql.connector.catalog.TableChange;
import org.apache.spark.sql.connector.catalog.TableInfo;
import org.apache.spark.sql.connector.catalog.constraints.Constraint;
import org.apache.spark.sql.connector.catalog.constraints.PrimaryKey;
import org.apache.spark.sql.connector.catalog.procedures.UnboundProcedure;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.stratalake.spark.bridge.Json;
import org.stratalake.spark.bridge.PythonBridge;
import org.stratalake.spark.functions.BucketFunction;
import org.stratalake.spark.functions.SliceFunction;

/**
 * Spark catalog over a stratalake warehouse. Every answer comes from the Python catalog through
 * {@link PythonBridge}; this class only translates between Spark's SPI and JSON.
 *
 * <p>Nothing is cached here: each loadTable asks Python, which keeps parsed metadata in its
 * reused worker and re-checks the latest snapshot and schema on every call. That costs one
 * bridge round trip (a few ms) and can never serve a stale schema or snapshot.
 */
public class SparkCatalog
    implements StagingTableCatalog, SupportsNamespaces, ProcedureCatalog, FunctionCatalog {
  private String name;
  private ObjectNode catalogConf;

  @Override
  public void initialize(String name, CaseInsensitiveStringMap options) {
    this.name = name;
    String warehouse = options.get("warehouse");
    if (warehouse == null || warehouse.isEmpty()) {
      throw new IllegalArgumentException(
          "stratalake: set spark.sql.catalog." + name + ".warehouse to the warehouse path or URI");
    }
    catalogConf = PythonBridge.JSON.createObjectNode();
    catalogConf.put("warehouse", warehouse);
    ObjectNode opts = catalogConf.putObject("options");
    for (Map.Entry<String, String> e : options.asCaseSensitiveMap().entrySet()) {
      if (!e.getKey().equals("warehouse")) {
        opts.put(e.getKey(), e.getValue());
      }
    }
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public String[] defaultNamespace() {
    return new String[] {"default"};
  }

  @Override
  public Set<TableCatalogCapability> capabilities() {
    return EnumSet.of(TableCatalogCapability.SUPPORT_TABLE_CONSTRAINT);
  }

  ObjectNode request() {
    ObjectNode req = PythonBridge.JSON.createObjectNode();
    req.set("catalog", catalogConf);
    return req;
  }

  private ObjectNode request(Identifier ident) {
    ObjectNode req = request();
    req.put("database", database(ident.namespace()));
    req.put("table", ident.name());
    return req;
  }

  private static String database(String[] namespace) {
    if (namespace.length != 1) {
      throw new IllegalArgumentException(
          "stratalake: namespaces are single-level databases, got " + String.join(".", namespace));
    }
    return namespace[0];
  }

  // ---- procedures: CALL lake.sys.<name>(...), defined in stratalake.spark.procedures -----

  @Override
  public UnboundProcedure loadProcedure(Identifier ident) {
    ObjectNode req = request();
    req.putArray("namespace").addAll(
        java.util.Arrays.stream(ident.namespace()).map(n -> req.textNode(n)).toList());
    req.put("procedure", ident.name());
    return new StrataLakeProcedure(this, ident.name(), PythonBridge.call("describe_procedure", req));
  }

  @Override
  public Identifier[] listProcedures(String[] namespace) {
    JsonNode names = PythonBridge.call("list_procedures", request());
    Identifier[] out = new Identifier[names.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = Identifier.of(namespace, names.get(i).asText());
    }
    return out;
  }

  // ---- namespaces --------------------------------------------------------------------------

  @Override
  public String[][] listNamespaces() {
    JsonNode dbs = PythonBridge.call("list_databases", request());
    String[][] out = new String[dbs.size()][];
    for (int i = 0; i < dbs.size(); i++) {
      out[i] = new String[] {dbs.get(i).asText()};
    }
    return out;
  }

  @Override
  public String[][] listNamespaces(String[] namespace) throws NoSuchNamespaceException {
    if (namespace.length == 0) {
      return listNamespaces();
    }
    if (!namespaceExists(namespace)) {
      throw new NoSuchNamespaceException(namespace);
    }
    return new String[0][];
  }

  @Override
  public boolean namespaceExists(String[] namespace) {
    if (namespace.length != 1) {
      return false;
    }
    ObjectNode req = request();
    req.put("database", namespace[0]);
    return PythonBridge.call("database_exists", req).asBoolean();
  }

  @Override
  public Map<String, String> loadNamespaceMetadata(String[] namespace)
      throws NoSuchNamespaceException {
    if (namespace.length != 1) {
      throw new NoSuchNamespaceException(namespace);
    }
    ObjectNode req = request();
    req.put("database", namespace[0]);
    return Json.toMap(PythonBridge.call("load_database", req));
  }

  @Override
  public void createNamespace(String[] namespace, Map<String, String> metadata) {
    ObjectNode req = request();
    req.put("database", database(namespace));
    req.set("properties", PythonBridge.JSON.valueToTree(metadata));
    PythonBridge.call("create_database", req);
  }

  @Override
  public void alterNamespace(String[] namespace, NamespaceChange... changes) {
    throw new UnsupportedOperationException("stratalake: ALTER DATABASE is not supported");
  }

  @Override
  public boolean dropNamespace(String[] namespace, boolean cascade) {
    ObjectNode req = request();
    req.put("database", database(namespace));
    req.put("cascade", cascade);
    return PythonBridge.call("drop_database", req).asBoolean();
  }

  // ---- tables ------------------------------------------------------------------------------

  @Override
  public Identifier[] listTables(String[] namespace) {
    ObjectNode req = request();
    req.put("database", database(namespace));
    JsonNode tables = PythonBridge.call("list_tables", req);
    Identifier[] out = new Identifier[tables.size()];
    for (int i = 0; i < tables.size(); i++) {
      out[i] = Identifier.of(namespace, tables.get(i).asText());
    }
    return out;
  }

  @Override
  public Table loadTable(Identifier ident) throws NoSuchTableException {
    return load(request(ident));
  }

  /** VERSION AS OF: a snapshot id or a tag name. */
  @Override
  public Table loadTable(Identifier ident, String version) throws NoSuchTableException {
    ObjectNode req = request(ident);
    req.put("version", version);
    return load(req);
  }

  /** TIMESTAMP AS OF: Spark passes microseconds since the epoch. */
  @Override
  public Table loadTable(Identifier ident, long timestampMicros) throws NoSuchTableException {
    ObjectNode req = request(ident);
    req.put("timestamp_micros", timestampMicros);
    return load(req);
  }

  private StrataLakeTable load(ObjectNode req) {
    return new StrataLakeTable(PythonBridge.call("load_table", req));
  }

  @Override
  public boolean tableExists(Identifier ident) {
    if (ident.namespace().length != 1) {
      return false;
    }
    return PythonBridge.call("table_exists", request(ident)).asBoolean();
  }

  // Spark 4.3 calls the TableInfo overload; the older ones stay for other callers.
  @Override
  @SuppressWarnings("deprecation")
  public Table createTable(
      Identifier ident, StructType schema, Transform[] partitions, Map<String, String> properties) {
    return createTable(ident, schema, partitions, properties, new Constraint[0]);
  }

  @Override
  @SuppressWarnings("deprecation")
  public Table createTable(
      Identifier ident, Column[] columns, Transform[] partitions, Map<String, String> properties) {
    return createTable(
        ident,
        org.apache.spark.sql.connector.catalog.CatalogV2Util.v2ColumnsToStructType(columns),
        partitions,
        properties,
        new Constraint[0]);
  }

  @Override
  public Table createTable(Identifier ident, TableInfo info) {
    return createTable(
        ident, info.schema(), info.partitions(), info.properties(), info.constraints());
  }

  private Table createTable(
      Identifier ident,
      StructType schema,
      Transform[] partitions,
      Map<String, String> properties,
      Constraint[] constraints) {
    return create(createRequest(ident, schema, partitions, properties, constraints));
  }

  StrataLakeTable create(ObjectNode createRequest) {
    return new StrataLakeTable(PythonBridge.call("create_table", createRequest));
  }

  /** Runs a staged create/replace in Python; see bridge_handlers.stage_table. */
  JsonNode stage(ObjectNode stageRequest) {
    return PythonBridge.call("stage_table", stageRequest);
  }

  StrataLakeTable table(JsonNode meta) {
    return new StrataLakeTable(meta);
  }

  /** A create_table request; also kept by staged tables that create lazily. */
  ObjectNode createRequest(
      Identifier ident,
      StructType schema,
      Transform[] partitions,
      Map<String, String> properties,
      Constraint[] constraints) {
    ObjectNode req = request(ident);
    req.set("schema", Json.readTree(schema.json()));
    ArrayNode partitionKeys = req.putArray("partition_keys");
    for (Transform t : partitions) {
      if (!"identity".equals(t.name()) || t.references().length != 1) {
        throw new UnsupportedOperationException(
            "stratalake: only PARTITIONED BY plain columns is supported, got " + t.describe());
      }
      partitionKeys.add(String.join(".", t.references()[0].fieldNames()));
    }
    for (Constraint c : constraints) {
      if (!(c instanceof PrimaryKey)) {
        throw new UnsupportedOperationException(
            "stratalake: only PRIMARY KEY constraints are supported, got " + c.toDDL());
      }
      ArrayNode cols = req.putArray("primary_keys");
      for (NamedReference ref : ((PrimaryKey) c).columns()) {
        cols.add(String.join(".", ref.fieldNames()));
      }
    }
    req.set("properties", PythonBridge.JSON.valueToTree(properties));
    return req;
  }

  // ---- staging: CREATE/REPLACE TABLE ... AS SELECT, DataFrameWriter.saveAsTable -------------

  @Override
  public StagedTable stageCreate(Identifier ident, TableInfo info)
      throws TableAlreadyExistsException {
    if (tableExists(ident)) {
      throw new TableAlreadyExistsException(ident);
    }
    return new StagedStrataLakeTable(this, ident, null, createRequest(ident, info));
  }

  @Override
  public StagedTable stageReplace(Identifier ident, TableInfo info) throws NoSuchTableException {
    return new StagedStrataLakeTable(this, ident, (StrataLakeTable) loadTable(ident),
        createRequest(ident, info));
  }

  @Override
  public StagedTable stageCreateOrReplace(Identifier ident, TableInfo info) {
    StrataLakeTable existing = null;
    if (tableExists(ident)) {
      existing = load(request(ident));
    }
    return new StagedStrataLakeTable(this, ident, existing, createRequest(ident, info));
  }

  private ObjectNode createRequest(Identifier ident, TableInfo info) {
    return createRequest(
        ident, info.schema(), info.partitions(), info.properties(), info.constraints());
  }

  @Override
  public Table alterTable(Identifier ident, TableChange... changes) throws NoSuchTableException {
    ObjectNode req = request(ident);
    ArrayNode out = req.putArray("changes");
    for (TableChange change : changes) {
      out.add(TableChanges.toJson(change));
    }
    return new StrataLakeTable(PythonBridge.call("alter_table", req));
  }

  @Override
  public boolean dropTable(Identifier ident) {
    if (ident.namespace().length != 1) {
      return false;
    }
    return PythonBridge.call("drop_table", request(ident)).asBoolean();
  }

  @Override
  public void renameTable(Identifier oldIdent, Identifier newIdent) {
    ObjectNode req = request(oldIdent);
    // Spark passes the new name relative to this catalog; a bare name keeps the database.
    String[] ns = newIdent.namespace().length == 0 ? oldIdent.namespace() : newIdent.namespace();
    req.put("new_database", database(ns));
    req.put("new_table", newIdent.name());
    PythonBridge.call("rename_table", req);
  }

  // ---- functions: Paimon's bucket, for bucketed joins and write distribution (BucketFunction) --

  @Override
  public Identifier[] listFunctions(String[] namespace) {
    return new Identifier[] {
      Identifier.of(namespace, BucketFunction.NAME),
      Identifier.of(namespace, BucketFunction.WRITE_NAME),
      Identifier.of(namespace, SliceFunction.NAME)
    };
  }

  @Override
  public org.apache.spark.sql.connector.catalog.functions.UnboundFunction loadFunction(
      Identifier ident) throws NoSuchFunctionException {
    if (BucketFunction.NAME.equals(ident.name())) {
      return new BucketFunction(false);
    }
    if (BucketFunction.WRITE_NAME.equals(ident.name())) {
      return new BucketFunction(true);
    }
    if (SliceFunction.NAME.equals(ident.name())) {
      return new SliceFunction();
    }
    throw new NoSuchFunctionException(ident);
  }
}
