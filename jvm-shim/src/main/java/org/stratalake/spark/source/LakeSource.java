package org.stratalake.spark.source;

import java.util.HashMap;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.execution.datasources.v2.python.PythonDataSourceV2;
import org.apache.spark.sql.types.StructType;

/** The Python data source "stratalake" that serves every scan's splits and every write. */
public final class LakeSource {
  private LakeSource() {}

  /** The short name the Python data source is registered under. */
  public static final String SOURCE_NAME = "stratalake";

  /** A fresh Python source per scan or write: PythonDataSourceV2 caches its first planning. */
  public static Table pythonTable(StructType schema) {
    PythonDataSourceV2 ds = new PythonDataSourceV2();
    ds.setShortName(SOURCE_NAME);
    return ds.getTable(schema, new Transform[0], new HashMap<>());
  }
}
