package org.stratalake.spark.catalog;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.catalyst.analysis.NamespaceAlreadyExistsException;
import org.apache.spark.sql.catalyst.analysis.NoSuchFunctionException;
import org.apache.spark.sql.catalyst.analysis.NoSuchNamespaceException;
import org.apache.spark.sql.catalyst.analysis.NoSuchTableException;
import org.apache.spark.sql.catalyst.analysis.NonEmptyNamespaceException;
import org.apache.spark.sql.catalyst.analysis.TableAlreadyExistsException;
import org.apache.spark.sql.connector.catalog.CatalogExtension;
import org.apache.spark.sql.connector.catalog.CatalogPlugin;
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
import org.apache.spark.sql.connector.catalog.functions.UnboundFunction;
import org.apache.spark.sql.connector.catalog.procedures.UnboundProcedure;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * Spark's session catalog ({@code spark_catalog}) with stratalake tables beside the ordinary ones,
 * as Paimon's SparkGenericCatalog and Iceberg's and Delta's session catalogs offer: one catalog in
 * which {@code CREATE TABLE t ... USING stratalake} makes a stratalake
 * table and any other provider makes a table of Spark's own catalog (Hive or in-memory).
 *
 * <p>Databases are the session catalog's: stratalake keeps the database of each of its tables in
 * its warehouse ({@code <warehouse>/<db>.db}, created with the first table), and drops it with the
 * session's. The warehouse defaults to {@code spark.sql.warehouse.dir}. A table name is looked up in
 * stratalake first, then in the session catalog. Views are the session catalog's (persisted where
 * its metastore persists them).
 */
public class SparkSessionCatalog
    implements CatalogExtension, StagingTableCatalog, ProcedureCatalog {
  /**
   * The provider whose tables this catalog creates in stratalake; others go to the session's.
   * ({@code USING paimon} never reaches a catalog: Spark refuses a provider it cannot find.)
   */
  static final Set<String> PROVIDERS = Set.of("stratalake");

  private final SparkCatalog lake = new SparkCatalog();
  private CatalogPlugin delegate;
  private String name;

  @Override
  public void initialize(String name, CaseInsensitiveStringMap options) {
    this.name = name;
    Map<String, String> opts = new HashMap<>(options.asCaseSensitiveMap());
    if (!options.containsKey("warehouse")) {
      opts.put(
          "warehouse",
          org.apache.spark.sql.classic.SparkSession$.MODULE$
              .active()
              .sessionState()
              .conf()
              .warehousePath());
    }
    lake.initialize(name, new CaseInsensitiveStringMap(opts));
  }

  @Override
  public void setDelegateCatalog(CatalogPlugin delegate) {
    this.delegate = delegate;
  }

  @Override
  public String name() {
    return name;
  }

  /** The stratalake catalog behind this one (its conf names the warehouse and options). */
  public SparkCatalog lake() {
    return lake;
  }

  private CatalogPlugin delegate() {
    if (delegate == null) {
      throw new IllegalStateException(
          "stratalake: "
              + getClass().getName()
              + " only serves as Spark's session catalog: set spark.sql.catalog.spark_catalog to it");
    }
    return delegate;
  }

  private TableCatalog tables() {
    return (TableCatalog) delegate();
  }

  private SupportsNamespaces namespaces() {
    return (SupportsNamespaces) delegate();
  }

  static boolean isLakeProvider(Map<String, String> properties) {
    String provider = properties.get(TableCatalog.PROP_PROVIDER);
    return provider != null && PROVIDERS.contains(provider.toLowerCase(Locale.ROOT));
  }

  private boolean isLakeTable(Identifier ident) {
    return ident.namespace().length == 1 && lake.tableExists(ident);
  }

  /** Whether {@code ident} names a stratalake table (not a table of Spark's own catalog). */
  public boolean holdsLakeTable(Identifier ident) {
    return isLakeTable(ident);
  }

  @Override
  public Set<TableCatalogCapability> capabilities() {
    return lake.capabilities();
  }

  // ---- namespaces: the session catalog's ---------------------------------------------------

  @Override
  public String[] defaultNamespace() {
    return namespaces().defaultNamespace();
  }

  @Override
  public String[][] listNamespaces() throws NoSuchNamespaceException {
    return namespaces().listNamespaces();
  }

  @Override
  public String[][] listNamespaces(String[] namespace) throws NoSuchNamespaceException {
    return namespaces().listNamespaces(namespace);
  }

  @Override
  public boolean namespaceExists(String[] namespace) {
    return namespaces().namespaceExists(namespace);
  }

  @Override
  public Map<String, String> loadNamespaceMetadata(String[] namespace)
      throws NoSuchNamespaceException {
    return namespaces().loadNamespaceMetadata(namespace);
  }

  @Override
  public void createNamespace(String[] namespace, Map<String, String> metadata)
      throws NamespaceAlreadyExistsException {
    namespaces().createNamespace(namespace, metadata);
  }

  @Override
  public void alterNamespace(String[] namespace, NamespaceChange... changes)
      throws NoSuchNamespaceException {
    namespaces().alterNamespace(namespace, changes);
  }

  /**
   * DROP DATABASE: its stratalake tables count as tables of the database (a database holding
   * one is not empty); CASCADE drops them one by one first. The session catalog then drops the
   * database (and, with CASCADE, its own tables), and stratalake its now empty database directory
   * where it keeps one apart from the session's metastore. Never a cascading drop through
   * stratalake's catalog: over a shared metastore it would take Spark's tables along.
   */
  @Override
  public boolean dropNamespace(String[] namespace, boolean cascade)
      throws NoSuchNamespaceException, NonEmptyNamespaceException {
    boolean lakeHasIt = namespace.length == 1 && lake.namespaceExists(namespace);
    if (lakeHasIt) {
      Identifier[] own = lake.listTables(namespace);
      if (own.length > 0 && !cascade) {
        throw new NonEmptyNamespaceException(namespace);
      }
      for (Identifier table : own) {
        lake.dropTable(table);
      }
    }
    boolean dropped = namespaces().dropNamespace(namespace, cascade);
    if (lakeHasIt && lake.namespaceExists(namespace)) {
      lake.dropNamespace(namespace, false);
    }
    return dropped;
  }

  // ---- tables: stratalake's first, then the session catalog's ------------------------------

  @Override
  public Identifier[] listTables(String[] namespace) throws NoSuchNamespaceException {
    Set<Identifier> out = new LinkedHashSet<>(List.of(tables().listTables(namespace)));
    if (namespace.length == 1 && lake.namespaceExists(namespace)) {
      out.addAll(List.of(lake.listTables(namespace)));
    }
    return out.toArray(new Identifier[0]);
  }

  @Override
  public Table loadTable(Identifier ident) throws NoSuchTableException {
    return isLakeTable(ident) ? lake.loadTable(ident) : tables().loadTable(ident);
  }

  @Override
  public Table loadTable(Identifier ident, String version) throws NoSuchTableException {
    return isLakeTable(ident) ? lake.loadTable(ident, version) : tables().loadTable(ident, version);
  }

  @Override
  public Table loadTable(Identifier ident, long timestamp) throws NoSuchTableException {
    return isLakeTable(ident)
        ? lake.loadTable(ident, timestamp)
        : tables().loadTable(ident, timestamp);
  }

  @Override
  public boolean tableExists(Identifier ident) {
    return isLakeTable(ident) || tables().tableExists(ident);
  }

  @Override
  public void invalidateTable(Identifier ident) {
    tables().invalidateTable(ident);
  }

  @Override
  public Table createTable(Identifier ident, TableInfo info)
      throws TableAlreadyExistsException, NoSuchNamespaceException {
    if (!isLakeProvider(info.properties())) {
      return tables().createTable(ident, info);
    }
    checkFree(ident);
    ensureDatabase(ident);
    return lake.createTable(ident, info);
  }

  @Override
  @SuppressWarnings("deprecation")
  public Table createTable(
      Identifier ident, StructType schema, Transform[] partitions, Map<String, String> properties)
      throws TableAlreadyExistsException, NoSuchNamespaceException {
    if (!isLakeProvider(properties)) {
      return tables().createTable(ident, schema, partitions, properties);
    }
    checkFree(ident);
    ensureDatabase(ident);
    return lake.createTable(ident, schema, partitions, properties);
  }

  @Override
  public Table createTableLike(Identifier ident, TableInfo info, Table source)
      throws TableAlreadyExistsException, NoSuchNamespaceException {
    if (!isLakeProvider(info.properties()) && !(source instanceof StrataLakeTable)) {
      return tables().createTableLike(ident, info, source);
    }
    checkFree(ident);
    ensureDatabase(ident);
    return lake.createTableLike(ident, info, source);
  }

  /** One name, one table: a stratalake table never shadows a session table or the reverse. */
  private void checkFree(Identifier ident) throws TableAlreadyExistsException {
    if (tableExists(ident)) {
      throw new TableAlreadyExistsException(ident);
    }
  }

  /** The session catalog owns databases: a stratalake table's database must exist there. */
  private void ensureDatabase(Identifier ident) throws NoSuchNamespaceException {
    if (ident.namespace().length != 1 || !namespaces().namespaceExists(ident.namespace())) {
      throw new NoSuchNamespaceException(ident.namespace());
    }
    if (!lake.namespaceExists(ident.namespace())) {
      lake.createNamespace(ident.namespace(), new HashMap<>());
    }
  }

  @Override
  public Table alterTable(Identifier ident, TableChange... changes) throws NoSuchTableException {
    return isLakeTable(ident) ? lake.alterTable(ident, changes) : tables().alterTable(ident, changes);
  }

  @Override
  public boolean dropTable(Identifier ident) {
    return isLakeTable(ident) ? lake.dropTable(ident) : tables().dropTable(ident);
  }

  @Override
  public boolean purgeTable(Identifier ident) {
    return isLakeTable(ident) ? lake.dropTable(ident) : tables().purgeTable(ident);
  }

  @Override
  public void renameTable(Identifier from, Identifier to)
      throws NoSuchTableException, TableAlreadyExistsException {
    if (!isLakeTable(from)) {
      tables().renameTable(from, to);
      return;
    }
    Identifier target = to.namespace().length == 0 ? Identifier.of(from.namespace(), to.name()) : to;
    checkFree(target);
    try {
      ensureDatabase(target);
    } catch (NoSuchNamespaceException e) {
      throw org.stratalake.spark.bridge.Errors.sneaky(e);
    }
    lake.renameTable(from, target);
  }

  // ---- CREATE/REPLACE TABLE ... AS SELECT ----------------------------------------------------

  @Override
  public StagedTable stageCreate(Identifier ident, TableInfo info)
      throws TableAlreadyExistsException, NoSuchNamespaceException {
    requireLake(info, "CREATE TABLE ... AS SELECT");
    checkFree(ident);
    ensureDatabase(ident);
    return lake.stageCreate(ident, info);
  }

  @Override
  public StagedTable stageReplace(Identifier ident, TableInfo info)
      throws NoSuchTableException, NoSuchNamespaceException {
    requireLake(info, "REPLACE TABLE ... AS SELECT");
    if (!isLakeTable(ident)) {
      if (tables().tableExists(ident)) {
        throw new UnsupportedOperationException(
            "stratalake: REPLACE TABLE "
                + ident
                + " USING stratalake would replace a table of Spark's session catalog; drop it"
                + " first");
      }
      throw new NoSuchTableException(ident);
    }
    return lake.stageReplace(ident, info);
  }

  @Override
  public StagedTable stageCreateOrReplace(Identifier ident, TableInfo info)
      throws NoSuchNamespaceException {
    requireLake(info, "CREATE OR REPLACE TABLE ... AS SELECT");
    if (!isLakeTable(ident) && tables().tableExists(ident)) {
      throw new UnsupportedOperationException(
          "stratalake: CREATE OR REPLACE TABLE "
              + ident
              + " USING stratalake would replace a table of Spark's session catalog; drop it first");
    }
    ensureDatabase(ident);
    return lake.stageCreateOrReplace(ident, info);
  }

  /**
   * Spark stages every CTAS of a catalog that can stage; those of other V2 providers are not
   * stratalake's to run atomically, so they are refused by name rather than half-done.
   */
  private static void requireLake(TableInfo info, String statement) {
    if (!isLakeProvider(info.properties())) {
      throw new UnsupportedOperationException(
          "stratalake: "
              + statement
              + " with provider '"
              + info.properties().get(TableCatalog.PROP_PROVIDER)
              + "' through stratalake's session catalog is not supported; create the table"
              + " first, then INSERT INTO it, or use USING stratalake");
    }
  }

  // ---- procedures and functions -----------------------------------------------------------

  @Override
  public UnboundProcedure loadProcedure(Identifier ident) {
    return lake.loadProcedure(ident);
  }

  @Override
  public Identifier[] listProcedures(String[] namespace) {
    return lake.listProcedures(namespace);
  }

  @Override
  public Identifier[] listFunctions(String[] namespace) throws NoSuchNamespaceException {
    List<Identifier> out = new ArrayList<>(List.of(((FunctionCatalog) delegate()).listFunctions(namespace)));
    out.addAll(List.of(lake.listFunctions(namespace)));
    return out.toArray(new Identifier[0]);
  }

  @Override
  public UnboundFunction loadFunction(Identifier ident) throws NoSuchFunctionException {
    try {
      return lake.loadFunction(ident);
    } catch (NoSuchFunctionException e) {
      return ((FunctionCatalog) delegate()).loadFunction(ident);
    }
  }
}
