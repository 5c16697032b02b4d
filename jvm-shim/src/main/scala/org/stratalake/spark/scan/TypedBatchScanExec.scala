package org.stratalake.spark.scan

import org.apache.spark.sql.catalyst.expressions.{AttributeReference, Expression, SortOrder}
import org.apache.spark.sql.connector.catalog.Table
import org.apache.spark.sql.connector.read.Scan
import org.apache.spark.sql.execution.datasources.v2.BatchScanExec

/**
 * A stratalake batch scan that tells Spark's code generator which column-vector class its
 * batches have, as Spark's own file source does (`StrataLakeScan.vectorClass`).
 *
 * Why: Spark compiles the whole-stage code of a query once per code text and reuses the class
 * for every plan of that shape. A DSv2 scan reports no vector types, so its code calls the
 * abstract `ColumnVector`, and one class serves every stratalake scan of the same query whatever
 * vectors they carry. Once scans of merged splits had run Arrow vectors through it, the JIT
 * compiled those calls as megamorphic, and later scans of fully compacted files through the same
 * class took about 25% more CPU than Spark's Parquet scan of the same rows. With the concrete
 * class named, the generated code casts to it: a scan that reads only whole files natively runs
 * the code Spark's Parquet scan runs, and scans of only merged splits get a class of their own.
 * Scans whose batches mix kinds keep the generic code.
 *
 * Put in place by [[TypedScans]]. Scala because Java cannot subclass `BatchScanExec`
 * (Scala's covariant overrides of `output` and of the final `mapChildren` have no Java form).
 * The constructor takes exactly
 * `BatchScanExec`'s parameters, so Spark's reflective tree copies rebuild this class; a
 * `copy(...)` by a Spark rule yields a plain `BatchScanExec`, which is still correct (the generic
 * code again).
 */
class TypedBatchScanExec(
    attributes: Seq[AttributeReference],
    batchScan: Scan,
    filters: Seq[Expression],
    sortOrder: Option[Seq[SortOrder]],
    catalogTable: Table,
    grouping: Option[Seq[Expression]])
  extends BatchScanExec(attributes, batchScan, filters, sortOrder, catalogTable, grouping) {

  override def vectorTypes: Option[Seq[String]] = scan match {
    // A runtime filter re-plans the scan at execution, so its splits are not the ones judged here:
    // such scans keep the generic code. (The scan is transient: null on executors.)
    case s: StrataLakeScan if runtimeFilters.isEmpty =>
      Option(s.vectorClass()).map(c => Seq.fill(output.size)(c))
    case _ => None
  }
}
