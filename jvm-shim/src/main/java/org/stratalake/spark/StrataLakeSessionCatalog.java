package org.stratalake.spark;

import org.stratalake.spark.catalog.SparkSessionCatalog;

/**
 * The session catalog users name in Spark's configuration
 * ({@code spark.sql.catalog.spark_catalog = org.stratalake.spark.StrataLakeSessionCatalog}):
 * stratalake tables ({@code USING stratalake}) beside Spark's own; see {@link SparkSessionCatalog}.
 */
public class StrataLakeSessionCatalog extends SparkSessionCatalog {}
