package org.stratalake.spark;

import org.stratalake.spark.catalog.SparkCatalog;

/**
 * The catalog class users name in Spark's configuration
 * ({@code spark.sql.catalog.<name> = org.stratalake.spark.StrataLakeCatalog}); the implementation
 * lives in {@link SparkCatalog}, with the rest of the catalog package.
 */
public class StrataLakeCatalog extends SparkCatalog {}
