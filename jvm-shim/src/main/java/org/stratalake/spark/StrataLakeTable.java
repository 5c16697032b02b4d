package org.stratalake.spark;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.catalog.constraints.Constraint;
import org.apache.spark.sql.connector.expressions.Expressions;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.execution.datasources.v2.python.PythonDataSourceV2;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * A stratalake table as Spark sees it: metadata from the Python catalog, scans and writes served
 * by the Python data source "stratalake".
 *
 * <p>The data source learns which table (and which snapshot, for time travel) it serves from the
 * "source_options" the catalog computed; they are added to every scan's and write's options.
 */
public class StrataLakeTable implements Table, SupportsRead, SupportsWrite {
  static final String SOURCE_NAME = "stratalake";

  private final String name;
  private final StructType schema;
  private final List<String> partitionKeys;
  private final List<String> primaryKeys;
  private final List<String> writeClusterColumns;
  private final Map<String, String> properties;
  private final Map<String, String> sourceOptions;

  StrataLakeTable(JsonNode meta) {
    this.name = meta.path("name").asText();
    this.schema = (StructType) DataType.fromJson(meta.get("schema").toString());
    this.partitionKeys = StrataLakeCatalog.toList(meta.get("partition_keys"));
    this.primaryKeys = StrataLakeCatalog.toList(meta.get("primary_keys"));
    this.writeClusterColumns = StrataLakeCatalog.toList(meta.get("write_cluster_columns"));
    this.properties = StrataLakeCatalog.toMap(meta.get("properties"));
    this.sourceOptions = StrataLakeCatalog.toMap(meta.get("source_options"));
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

  @Override
  public Set<TableCapability> capabilities() {
    return EnumSet.of(
        TableCapability.BATCH_READ,
        TableCapability.BATCH_WRITE,
        TableCapability.TRUNCATE,
        TableCapability.OVERWRITE_BY_FILTER,
        TableCapability.OVERWRITE_DYNAMIC);
  }

  /** A fresh Python source per scan or write: PythonDataSourceV2 caches its first planning. */
  static Table pythonTable(StructType schema) {
    PythonDataSourceV2 ds = new PythonDataSourceV2();
    ds.setShortName(SOURCE_NAME);
    return ds.getTable(schema, new Transform[0], new HashMap<>());
  }

  Map<String, String> withSourceOptions(Map<String, String> userOptions) {
    Map<String, String> merged = new HashMap<>(userOptions);
    merged.putAll(sourceOptions);
    return merged;
  }

  @Override
  public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
    CaseInsensitiveStringMap merged =
        new CaseInsensitiveStringMap(withSourceOptions(options.asCaseSensitiveMap()));
    return ((SupportsRead) pythonTable(schema)).newScanBuilder(merged);
  }

  @Override
  public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
    return new StrataLakeWriteBuilder(this, info);
  }

  List<String> partitionKeys() {
    return partitionKeys;
  }

  List<String> writeClusterColumns() {
    return writeClusterColumns;
  }

  @Override
  public String toString() {
    return "StrataLakeTable(" + name + ")";
  }
}
