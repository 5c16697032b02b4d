package org.stratalake.spark.catalog;

import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.LinkedHashMap;
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
import org.stratalake.spark.bridge.Messages.AlterTable;
import org.stratalake.spark.bridge.Messages.CatalogConf;
import org.stratalake.spark.bridge.Messages.CreateDatabase;
import org.stratalake.spark.bridge.Messages.CreateTable;
import org.stratalake.spark.bridge.Messages.DatabaseExists;
import org.stratalake.spark.bridge.Messages.DescribeProcedure;
import org.stratalake.spark.bridge.Messages.DropDatabase;
import org.stratalake.spark.bridge.Messages.DropTable;
import org.stratalake.spark.bridge.Messages.ListDatabases;
import org.stratalake.spark.bridge.Messages.ListProcedures;
import org.stratalake.spark.bridge.Messages.ListTables;
import org.stratalake.spark.bridge.Messages.LoadDatabase;
import org.stratalake.spark.bridge.Messages.LoadTable;
import org.stratalake.spark.bridge.Messages.RenameTable;
import org.stratalake.spark.bridge.Messages.StageTable;
import org.stratalake.spark.bridge.Messages.TableDescription;
import org.stratalake.spark.bridge.Messages.TableExists;
import org.stratalake.spark.bridge.Messages;
import org.stratalake.spark.bridge.Operation;
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
  private CatalogConf catalogConf;

  @Override
  public void initialize(String name, CaseInsensitiveStringMap options) {
    this.name = name;
    String warehouse = options.get("warehouse");
    if (warehouse == null || warehouse.isEmpty()) {
      throw new IllegalArgumentException(
          "stratalake: set spark.sql.catalog." + name + ".warehouse to the warehouse path or URI");
    }
    Map<String, String> opts = new LinkedHashMap<>();
    for (Map.Entry<String, String> e : options.asCaseSensitiveMap().entrySet()) {
      if (!e.getKey().equals("warehouse")) {
        opts.put(e.getKey(), e.getValue());
      }
    }
    catalogConf = new CatalogConf(warehouse, opts);
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
    // Column DEFAULTs: Python stores them as Paimon's schema fields' defaultValue.
    return EnumSet.of(
        TableCatalogCapability.SUPPORT_TABLE_CONSTRAINT,
        TableCatalogCapability.SUPPORT_COLUMN_DEFAULT_VALUE);
  }

  /** The catalog every request of this catalog names. */
  public CatalogConf conf() {
    return catalogConf;
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
    DescribeProcedure req =
        new DescribeProcedure(catalogConf, List.of(ident.namespace()), ident.name());
    return new StrataLakeProcedure(
        this, ident.name(), PythonBridge.call(Operation.DESCRIBE_PROCEDURE, req));
  }

  @Override
  public Identifier[] listProcedures(String[] namespace) {
    List<String> names =
        PythonBridge.call(Operation.LIST_PROCEDURES, new ListProcedures(catalogConf));
    Identifier[] out = new Identifier[names.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = Identifier.of(namespace, names.get(i));
    }
    return out;
  }

  // ---- namespaces --------------------------------------------------------------------------

  @Override
  public String[][] listNamespaces() {
    List<String> dbs = PythonBridge.call(Operation.LIST_DATABASES, new ListDatabases(catalogConf));
    String[][] out = new String[dbs.size()][];
    for (int i = 0; i < dbs.size(); i++) {
      out[i] = new String[] {dbs.get(i)};
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
    return PythonBridge.call(
        Operation.DATABASE_EXISTS, new DatabaseExists(catalogConf, namespace[0]));
  }

  @Override
  public Map<String, String> loadNamespaceMetadata(String[] namespace)
      throws NoSuchNamespaceException {
    if (namespace.length != 1) {
      throw new NoSuchNamespaceException(namespace);
    }
    return new HashMap<>(
        PythonBridge.call(Operation.LOAD_DATABASE, new LoadDatabase(catalogConf, namespace[0])));
  }

  @Override
  public void createNamespace(String[] namespace, Map<String, String> metadata) {
    PythonBridge.call(
        Operation.CREATE_DATABASE,
        new CreateDatabase(catalogConf, database(namespace), metadata));
  }

  @Override
  public void alterNamespace(String[] namespace, NamespaceChange... changes) {
    throw new UnsupportedOperationException("stratalake: ALTER DATABASE is not supported");
  }

  @Override
  public boolean dropNamespace(String[] namespace, boolean cascade) {
    return PythonBridge.call(
        Operation.DROP_DATABASE, new DropDatabase(catalogConf, database(namespace), cascade));
  }

  // ---- tables ------------------------------------------------------------------------------

  @Override
  public Identifier[] listTables(String[] namespace) {
    List<String> tables =
        PythonBridge.call(Operation.LIST_TABLES, new ListTables(catalogConf, database(namespace)));
    Identifier[] out = new Identifier[tables.size()];
    for (int i = 0; i < tables.size(); i++) {
      out[i] = Identifier.of(namespace, tables.get(i));
    }
    return out;
  }

  @Override
  public Table loadTable(Identifier ident) throws NoSuchTableException {
    return load(ident, null, null);
  }

  /** VERSION AS OF: a snapshot id or a tag name. */
  @Override
  public Table loadTable(Identifier ident, String version) throws NoSuchTableException {
    return load(ident, version, null);
  }

  /** TIMESTAMP AS OF: Spark passes microseconds since the epoch. */
  @Override
  public Table loadTable(Identifier ident, long timestampMicros) throws NoSuchTableException {
    return load(ident, null, timestampMicros);
  }

  private StrataLakeTable load(Identifier ident, String version, Long timestampMicros) {
    LoadTable req =
        new LoadTable(
            catalogConf, database(ident.namespace()), ident.name(), version, timestampMicros);
    return new StrataLakeTable(PythonBridge.call(Operation.LOAD_TABLE, req));
  }

  @Override
  public boolean tableExists(Identifier ident) {
    if (ident.namespace().length != 1) {
      return false;
    }
    return PythonBridge.call(
        Operation.TABLE_EXISTS,
        new TableExists(catalogConf, database(ident.namespace()), ident.name()));
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

  /**
   * CREATE TABLE ... LIKE: Spark passes the source's columns, partitioning and constraints (the
   * primary key); as Paimon, the new table also takes the source's options (bucket, merge
   * engine...), under any TBLPROPERTIES the statement gives. The location is the catalog's.
   */
  @Override
  public Table createTableLike(Identifier ident, TableInfo info, Table source) {
    Map<String, String> properties = new java.util.HashMap<>();
    if (source instanceof StrataLakeTable) {
      properties.putAll(source.properties());
      for (String key : new String[] {"location", "is_managed_location", "provider", "owner"}) {
        properties.remove(key);
      }
    }
    properties.putAll(info.properties());
    return createTable(ident, info.schema(), info.partitions(), properties, info.constraints());
  }

  private Table createTable(
      Identifier ident,
      StructType schema,
      Transform[] partitions,
      Map<String, String> properties,
      Constraint[] constraints) {
    return create(createRequest(ident, schema, partitions, properties, constraints));
  }

  StrataLakeTable create(CreateTable createRequest) {
    return new StrataLakeTable(PythonBridge.call(Operation.CREATE_TABLE, createRequest));
  }

  /** Runs a staged create/replace in Python; see bridge_handlers.stage_table. */
  Messages.StagedTable stage(StageTable stageRequest) {
    return PythonBridge.call(Operation.STAGE_TABLE, stageRequest);
  }

  StrataLakeTable table(TableDescription meta) {
    return new StrataLakeTable(meta);
  }

  /** A create_table request; also kept by staged tables that create lazily. */
  CreateTable createRequest(
      Identifier ident,
      StructType schema,
      Transform[] partitions,
      Map<String, String> properties,
      Constraint[] constraints) {
    List<String> partitionKeys = new ArrayList<>();
    for (Transform t : partitions) {
      if (!"identity".equals(t.name()) || t.references().length != 1) {
        throw new UnsupportedOperationException(
            "stratalake: only PARTITIONED BY plain columns is supported, got " + t.describe());
      }
      partitionKeys.add(String.join(".", t.references()[0].fieldNames()));
    }
    List<String> primaryKeys = new ArrayList<>();
    for (Constraint c : constraints) {
      if (!(c instanceof PrimaryKey)) {
        throw new UnsupportedOperationException(
            "stratalake: only PRIMARY KEY constraints are supported, got " + c.toDDL());
      }
      primaryKeys.clear();
      for (NamedReference ref : ((PrimaryKey) c).columns()) {
        primaryKeys.add(String.join(".", ref.fieldNames()));
      }
    }
    return new CreateTable(
        catalogConf,
        database(ident.namespace()),
        ident.name(),
        Json.readTree(schema.json()),
        partitionKeys,
        primaryKeys,
        properties);
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
      existing = load(ident, null, null);
    }
    return new StagedStrataLakeTable(this, ident, existing, createRequest(ident, info));
  }

  private CreateTable createRequest(Identifier ident, TableInfo info) {
    return createRequest(
        ident, info.schema(), info.partitions(), info.properties(), info.constraints());
  }

  @Override
  public Table alterTable(Identifier ident, TableChange... changes) throws NoSuchTableException {
    List<Messages.TableChange> out = new ArrayList<>();
    for (TableChange change : changes) {
      out.add(TableChanges.toMessage(change));
    }
    AlterTable req =
        new AlterTable(catalogConf, database(ident.namespace()), ident.name(), out);
    return new StrataLakeTable(PythonBridge.call(Operation.ALTER_TABLE, req));
  }

  @Override
  public boolean dropTable(Identifier ident) {
    if (ident.namespace().length != 1) {
      return false;
    }
    return PythonBridge.call(
        Operation.DROP_TABLE, new DropTable(catalogConf, database(ident.namespace()), ident.name()));
  }

  @Override
  public void renameTable(Identifier oldIdent, Identifier newIdent) {
    // Spark passes the new name relative to this catalog; a bare name keeps the database.
    String[] ns = newIdent.namespace().length == 0 ? oldIdent.namespace() : newIdent.namespace();
    RenameTable req =
        new RenameTable(
            catalogConf,
            database(oldIdent.namespace()),
            oldIdent.name(),
            database(ns),
            newIdent.name());
    PythonBridge.call(Operation.RENAME_TABLE, req);
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
