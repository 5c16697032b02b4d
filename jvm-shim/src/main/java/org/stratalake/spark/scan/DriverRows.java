package org.stratalake.spark.scan;

import org.apache.spark.sql.connector.read.LocalScan;

/**
 * A stratalake scan whose rows the driver already holds: COUNT(*) and aggregates answered from
 * file metadata, metadata system tables, procedure results. {@link DriverRowsStrategy} evaluates
 * a projection or filter over them on the driver too, so collecting them runs no Spark job.
 */
public interface DriverRows extends LocalScan {}
