package org.stratalake.spark.scan

import scala.collection.mutable.ArrayBuffer
import scala.util.control.NonFatal

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, BindReferences, EqualNullSafe, EqualTo, Expression, In, InSet, Literal, NamedExpression, Predicate, PythonFuncExpression, SubqueryExpression, UnsafeProjection}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.{CollectLimitExec, ColumnarToRowExec, ExecSubqueryExpression, FilterExec, ProjectExec, SparkPlan, UnaryExecNode}
import org.apache.spark.sql.execution.datasources.v2.BatchScanExec
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types.{ByteType, DataType, IntegerType, LongType, ShortType, StringType}
import org.apache.spark.sql.vectorized.{ColumnarBatch, ColumnVector}
import org.apache.spark.unsafe.types.UTF8String

/**
 * A filtered read of a few small files whose filter pins a column to values (`k = 5`,
 * `k IN (1, 2)`): a point lookup. Collected (`collect()`, `take(n)`, `show()`), it reads its
 * native splits on the driver with the scan's own readers and runs no Spark job; anything else
 * (a parent operator, a split that needs a Python merge, too many bytes or rows) runs `child`,
 * the plan Spark made.
 *
 * Why: a lookup reads a few pages; the job that reads them costs more than the reading (task
 * scheduling and serialization, ~25-40 ms on two cores, against a few ms of decoding). Iceberg's
 * and Paimon's lookups on Spark pay it too.
 *
 * The filter and the projection are Spark's own expressions, evaluated interpreted on the rows
 * whose pinned columns match (checked on the column vectors first, so only those rows are
 * materialized). Bounded: at most [[DriverLookups.maxBytes]] of files, at most
 * [[DriverLookups.MaxRows]] rows kept; past either the job runs instead.
 */
case class DriverLookupExec(
    child: SparkPlan,
    condition: Expression,
    projectList: Option[Seq[NamedExpression]])
  extends UnaryExecNode {

  override def output: Seq[Attribute] = child.output

  override protected def doExecute(): RDD[InternalRow] = child.execute()

  override def executeCollect(): Array[InternalRow] =
    local(Int.MaxValue).getOrElse(child.executeCollect())

  override def executeTake(n: Int): Array[InternalRow] =
    local(n).getOrElse(child.executeTake(n))

  override protected def withNewChildInternal(newChild: SparkPlan): DriverLookupExec =
    copy(child = newChild)

  /** The rows read on the driver (at most `limit`), or None when the job must run instead. */
  private def local(limit: Int): Option[Array[InternalRow]] = {
    val scan = child.collectLeaves() match {
      case Seq(b: BatchScanExec) if b.scan.isInstanceOf[StrataLakeScan] && b.runtimeFilters.isEmpty => b
      case _ => return None
    }
    val input = scan.output
    val pins = DriverLookups.pins(condition, input)
    if (pins.isEmpty) return None
    val partitions = scan.batch.planInputPartitions()
    var bytes = 0L
    for (p <- partitions) p match {
      case s: StrataLakeInputPartition if s.isNative() && s.superseded == null => bytes += s.bytes
      case _ => return None
    }
    if (bytes > DriverLookups.maxBytes) return None
    try {
      // Each split gets its own copy of the reader factory, as each task deserializes its own:
      // Spark's Parquet factory keeps the reader it built last, so it is neither thread-safe nor,
      // once used, serializable (the job that may still run needs it as planned).
      val factory = org.apache.spark.SparkEnv.get.closureSerializer.newInstance()
        .serialize(scan.readerFactory)
      val loader = Thread.currentThread.getContextClassLoader
      val bound = BindReferences.bindReference(condition, input)
      val projected = projectList.getOrElse(output)
      // Each split on a thread of its own (the filter and projection are per thread: they keep
      // state), its rows kept in split order, as a job's collect returns them.
      val cap = math.min(limit, DriverLookups.MaxRows + 1)
      val reads = partitions.toSeq.map { p =>
        DriverLookups.submit(() => read(copyOf(factory, loader), p, pins, bound, projected, input, cap))
      }
      val results = reads.map(_.get())
      val metrics = scan.customMetrics
      for ((_, values) <- results; m <- values) metrics.get(m.name()).foreach(_.add(m.value()))
      val all = results.flatMap(_._1)
      if (all.length > DriverLookups.MaxRows && limit > DriverLookups.MaxRows) return None
      val rows = all.take(limit).toArray
      // The scan's metrics as its tasks would have reported them (rows read, files, bytes).
      scan.longMetric("numOutputRows").add(rows.length)
      org.apache.spark.sql.execution.metric.SQLMetrics.postDriverMetricUpdates(
        sparkContext,
        sparkContext.getLocalProperty(org.apache.spark.sql.execution.SQLExecution.EXECUTION_ID_KEY),
        (metrics.values ++ Seq(scan.longMetric("numOutputRows"))).toSeq)
      Some(rows)
    } catch {
      // What the driver cannot evaluate or read (an expression only a task evaluates) is left to
      // the job, which reports its own errors.
      case e: java.util.concurrent.ExecutionException if NonFatal(e.getCause) =>
        logDebug("stratalake: a lookup read on the driver failed; the job runs it", e.getCause)
        None
      case NonFatal(e) =>
        logDebug("stratalake: a lookup read on the driver failed; the job runs it", e)
        None
    }
  }

  private def copyOf(
      factory: java.nio.ByteBuffer,
      loader: ClassLoader): org.apache.spark.sql.connector.read.PartitionReaderFactory =
    org.apache.spark.SparkEnv.get.closureSerializer.newInstance()
      .deserialize[org.apache.spark.sql.connector.read.PartitionReaderFactory](
        factory.duplicate(), loader)

  /** One split's rows that pass the filter (at most `cap`), and its reader's metrics. */
  private def read(
      factory: org.apache.spark.sql.connector.read.PartitionReaderFactory,
      p: org.apache.spark.sql.connector.read.InputPartition,
      pins: Seq[Pin],
      bound: Expression,
      projected: Seq[Expression],
      input: Seq[Attribute],
      cap: Int): (Seq[InternalRow], Seq[org.apache.spark.sql.connector.metric.CustomTaskMetric]) = {
    val predicate = Predicate.createInterpreted(bound)
    val projection = UnsafeProjection.create(projected, input)
    val out = ArrayBuffer.empty[InternalRow]
    def keep(row: InternalRow): Unit =
      if (predicate.eval(row)) out += projection(row).copy()
    if (factory.supportColumnarReads(p)) {
      val reader = factory.createColumnarReader(p)
      try {
        while (out.length < cap && reader.next()) {
          val batch = reader.get()
          var i = 0
          while (i < batch.numRows() && out.length < cap) {
            if (pins.forall(_.matches(batch, i))) keep(batch.getRow(i))
            i += 1
          }
        }
        (out.toSeq, reader.currentMetricsValues().toSeq)
      } finally reader.close()
    } else {
      val reader = factory.createReader(p)
      try {
        while (out.length < cap && reader.next()) {
          val row = reader.get()
          if (pins.forall(_.matches(row))) keep(row)
        }
        (out.toSeq, reader.currentMetricsValues().toSeq)
      } finally reader.close()
    }
  }
}

/** Spark's hook for [[DriverLookups]]: after its columnar transitions. */
class DriverLookupRule extends org.apache.spark.sql.execution.ColumnarRule {
  override def postColumnarTransitions: Rule[SparkPlan] = DriverLookups
}

/**
 * Puts [[DriverLookupExec]] over a query whose result is a filtered scan of a stratalake table
 * (after Spark's columnar transitions, before its whole-stage code): the plan's root, or the
 * child of its collect limit.
 */
object DriverLookups extends Rule[SparkPlan] {
  /** SQL setting: the most bytes of data files a lookup reads on the driver (0: never). */
  val MaxBytesKey = "stratalake.read.driver-lookup.max-bytes"
  val DefaultMaxBytes: Long = 32L * 1024 * 1024
  /** Rows a lookup keeps on the driver before it gives up and runs the job. */
  val MaxRows = 10000

  /** Reads splits on the driver, as many at once as the driver has cores. */
  private lazy val pool: java.util.concurrent.ExecutorService = {
    val threads = math.max(2, Runtime.getRuntime.availableProcessors())
    val named = new java.util.concurrent.atomic.AtomicInteger()
    java.util.concurrent.Executors.newFixedThreadPool(threads, (r: Runnable) => {
      val t = new Thread(r, "stratalake-driver-lookup-" + named.incrementAndGet())
      t.setDaemon(true)
      t
    })
  }

  def submit[T](task: () => T): java.util.concurrent.Future[T] =
    pool.submit(new java.util.concurrent.Callable[T] { override def call(): T = task() })

  /** The setting in bytes (a number of bytes or a size such as `32m`). */
  def maxBytes: Long = {
    val value = SQLConf.get.getConfString(MaxBytesKey, null)
    if (value == null) return DefaultMaxBytes
    try org.apache.spark.network.util.JavaUtils.byteStringAsBytes(value.trim)
    catch {
      case _: NumberFormatException =>
        throw new IllegalArgumentException(
          s"$MaxBytesKey must be a size in bytes such as 33554432 or 32m (0 turns point lookups " +
            s"on the driver off), not '$value'")
    }
  }

  override def apply(plan: SparkPlan): SparkPlan = {
    if (maxBytes <= 0) return plan
    plan match {
      case limit: CollectLimitExec => wrap(limit.child).map(c => limit.withNewChildren(Seq(c))).getOrElse(plan)
      case _ => wrap(plan).getOrElse(plan)
    }
  }

  private def wrap(plan: SparkPlan): Option[SparkPlan] = {
    val (list, filter) = plan match {
      case ProjectExec(l, f: FilterExec) => (Some(l), f)
      case f: FilterExec => (None, f)
      case _ => return None
    }
    val scan = filter.child match {
      case ColumnarToRowExec(b: BatchScanExec) => b
      case b: BatchScanExec => b
      case _ => return None
    }
    if (!scan.scan.isInstanceOf[StrataLakeScan] || pins(filter.condition, scan.output).isEmpty) {
      return None
    }
    val expressions = filter.condition +: list.getOrElse(Nil)
    if (!expressions.forall(driverSafe)) return None
    Some(DriverLookupExec(plan, filter.condition, list))
  }

  /** Deterministic, and no subquery or Python function (evaluated only in a task). */
  private def driverSafe(e: Expression): Boolean =
    e.deterministic && e.find {
      case _: SubqueryExpression | _: ExecSubqueryExpression | _: PythonFuncExpression => true
      case _ => false
    }.isEmpty

  private def conjuncts(e: Expression): Seq[Expression] = e match {
    case org.apache.spark.sql.catalyst.expressions.And(l, r) => conjuncts(l) ++ conjuncts(r)
    case other => Seq(other)
  }

  /** The filter's conjuncts that pin a column of `input` to literal values. */
  def pins(condition: Expression, input: Seq[Attribute]): Seq[Pin] = conjuncts(condition).flatMap {
    case EqualTo(a: Attribute, l: Literal) => Pin.of(a, Seq(l.value), input)
    case EqualTo(l: Literal, a: Attribute) => Pin.of(a, Seq(l.value), input)
    case EqualNullSafe(a: Attribute, l: Literal) if l.value != null => Pin.of(a, Seq(l.value), input)
    case In(a: Attribute, list) if list.forall(_.isInstanceOf[Literal]) =>
      Pin.of(a, list.map(_.asInstanceOf[Literal].value), input)
    case InSet(a: Attribute, set) => Pin.of(a, set.toSeq, input)
    case _ => None
  }
}

/** A column of the scan's output that must hold one of `values` (nulls never match). */
final class Pin private (ordinal: Int, dataType: DataType, longs: Set[Long], strings: Set[UTF8String]) {
  def matches(batch: ColumnarBatch, row: Int): Boolean = {
    val v: ColumnVector = batch.column(ordinal)
    !v.isNullAt(row) && (dataType match {
      case LongType => longs.contains(v.getLong(row))
      case IntegerType => longs.contains(v.getInt(row).toLong)
      case ShortType => longs.contains(v.getShort(row).toLong)
      case ByteType => longs.contains(v.getByte(row).toLong)
      case _ => strings.contains(v.getUTF8String(row))
    })
  }

  def matches(row: InternalRow): Boolean =
    !row.isNullAt(ordinal) && (dataType match {
      case LongType => longs.contains(row.getLong(ordinal))
      case IntegerType => longs.contains(row.getInt(ordinal).toLong)
      case ShortType => longs.contains(row.getShort(ordinal).toLong)
      case ByteType => longs.contains(row.getByte(ordinal).toLong)
      case _ => strings.contains(row.getUTF8String(ordinal))
    })
}

object Pin {
  def of(a: Attribute, values: Seq[Any], input: Seq[Attribute]): Option[Pin] = {
    val ordinal = input.indexWhere(_.exprId == a.exprId)
    if (ordinal < 0 || values.isEmpty) return None
    val present = values.filter(_ != null)
    a.dataType match {
      case LongType | IntegerType | ShortType | ByteType =>
        val longs = present.map {
          case n: java.lang.Number => n.longValue()
          case _ => return None
        }
        Some(new Pin(ordinal, a.dataType, longs.toSet, Set.empty))
      case StringType => // (binary collation: equal strings are equal bytes)
        val strings = present.map {
          case s: UTF8String => s
          case _ => return None
        }
        Some(new Pin(ordinal, StringType, Set.empty, strings.toSet))
      case _ => None
    }
  }
}
