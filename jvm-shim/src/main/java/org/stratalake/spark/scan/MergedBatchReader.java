package org.stratalake.spark.scan;

import java.util.HashMap;
import java.util.Map;
import org.apache.spark.TaskContext;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.errors.QueryExecutionErrors$;
import org.apache.spark.sql.execution.datasources.v2.python.PythonCustomMetric$;
import org.apache.spark.sql.execution.datasources.v2.python.PythonInputPartition;
import org.apache.spark.sql.execution.datasources.v2.python.PythonPartitionReaderFactory;
import org.apache.spark.sql.execution.datasources.v2.python.UserDefinedPythonDataSource$;
import org.apache.spark.sql.execution.datasources.v2.python.UserDefinedPythonDataSource;
import org.apache.spark.sql.execution.metric.SQLMetric;
import org.apache.spark.sql.execution.python.ArrowPythonRunner;
import org.apache.spark.sql.execution.python.MapInBatchEvaluatorFactory;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.DataType$;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ArrowColumnVector;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.stratalake.spark.bridge.Errors;

/**
 * A split that needs a merge, read as columnar batches: the Python merge's Arrow stream comes back
 * as {@link ArrowColumnVector}s handed to Spark as they are, with no per-row conversion.
 *
 * <p>Why Spark's own {@link ArrowPythonRunner} rather than a private worker protocol: it is exactly
 * what Spark's Python data source reader runs per partition (the same pickled reader, the same
 * {@code read_from_data_source} worker, so the Python side, its schema checks and its error
 * messages are unchanged), and it already does everything a task-side Python read needs: pooled
 * daemon workers, Arrow IPC decoding into a reused, bounded batch, task cancellation, worker
 * release or kill at task end (an early close for a LIMIT leaves the stream unread: Spark's task
 * completion listener then kills the worker and frees the allocator), Python exceptions as
 * {@code PythonException} with their message, and the Python metrics. Spark's reader only adds a
 * per-row step after it ({@code batch.rowIterator()} and an {@code UnsafeProjection}); this reader
 * stops before it. The runner's inputs are taken from the evaluator factory Spark itself builds for
 * the reader, so they stay what Spark sends; the cost is the internal API, pinned to Spark 4.3.
 */
public final class MergedBatchReader implements PartitionReader<ColumnarBatch> {
  /** SQL setting: hand merged splits to Spark as columnar batches (default true). */
  static final String ENABLED = "stratalake.read.columnar.enabled";

  private final UserDefinedPythonDataSource source;
  private final scala.collection.immutable.Map<String, SQLMetric> metrics;
  private final scala.collection.Iterator<ColumnarBatch> batches;
  private final DataType outputType;
  private final int columns;
  private final boolean validate;
  private final long[] totals;
  private ColumnarBatch value;

  MergedBatchReader(
      PythonPartitionReaderFactory python, PythonInputPartition split, long[] totals) {
    this.totals = totals;
    this.source = python.org$apache$spark$sql$execution$datasources$v2$python$PythonPartitionReaderFactory$$source;
    StructType outputSchema =
        python.org$apache$spark$sql$execution$datasources$v2$python$PythonPartitionReaderFactory$$outputSchema;
    this.metrics = PythonCustomMetric$.MODULE$.pythonMetrics();
    MapInBatchEvaluatorFactory f =
        source.createMapInBatchEvaluatorFactory(
            python.org$apache$spark$sql$execution$datasources$v2$python$PythonPartitionReaderFactory$$pickledReadFunc,
            "read_from_data_source",
            UserDefinedPythonDataSource$.MODULE$.readInputSchema(),
            outputSchema,
            metrics,
            python.org$apache$spark$sql$execution$datasources$v2$python$PythonPartitionReaderFactory$$jobArtifactUUID,
            python.org$apache$spark$sql$execution$datasources$v2$python$PythonPartitionReaderFactory$$sessionUUID);
    this.outputType = f.org$apache$spark$sql$execution$python$MapInBatchEvaluatorFactory$$outputSchema;
    this.columns = outputSchema.fields().length;
    this.validate = SQLConf.get().pysparkArrowValidateSchema();
    // The Python side reads its input as a DataFrame of one struct column: the pickled split.
    StructType input =
        new StructType(
            new StructField[] {
              new StructField(
                  "struct",
                  f.org$apache$spark$sql$execution$python$MapInBatchEvaluatorFactory$$inputSchema,
                  true,
                  Metadata.empty())
            });
    ArrowPythonRunner runner =
        new ArrowPythonRunner(
            f.org$apache$spark$sql$execution$python$MapInBatchEvaluatorFactory$$chainedFunc,
            f.org$apache$spark$sql$execution$python$MapInBatchEvaluatorFactory$$pythonEvalType,
            new int[][] {{0}},
            input,
            f.org$apache$spark$sql$execution$python$MapInBatchEvaluatorFactory$$sessionLocalTimeZone,
            f.org$apache$spark$sql$execution$python$MapInBatchEvaluatorFactory$$largeVarTypes,
            f.org$apache$spark$sql$execution$python$MapInBatchEvaluatorFactory$$pythonRunnerConf,
            metrics,
            f.org$apache$spark$sql$execution$python$MapInBatchEvaluatorFactory$$jobArtifactUUID,
            f.org$apache$spark$sql$execution$python$MapInBatchEvaluatorFactory$$sessionUUID);
    InternalRow partition =
        new GenericInternalRow(new Object[] {split.pickedPartition()});
    InternalRow row = new GenericInternalRow(new Object[] {partition});
    TaskContext context = TaskContext.get();
    scala.collection.Iterator$ iterators = scala.collection.Iterator$.MODULE$;
    // One input batch holding one row; the runner streams the merge's batches back.
    this.batches =
        runner.compute(
            iterators.single(iterators.single(row)), context.partitionId(), context);
  }

  /** Whether the session's SQL setting leaves the columnar merged path on. */
  static boolean enabled() {
    String value = SQLConf.get().getConfString(ENABLED, null);
    return value == null || Boolean.parseBoolean(value.trim());
  }

  @Override
  public boolean next() {
    while (batches.hasNext()) {
      ColumnarBatch batch = batches.next();
      ColumnVector struct = batch.column(0);
      if (validate
          && !DataType$.MODULE$.equalsIgnoreCompatibleNullability(struct.dataType(), outputType)) {
        throw Errors.sneaky(
            QueryExecutionErrors$.MODULE$.arrowDataTypeMismatchError(
                "SQL_MAP_ARROW_ITER_UDF",
                scala.jdk.javaapi.CollectionConverters.asScala(
                        java.util.List.of(outputType))
                    .toSeq(),
                scala.jdk.javaapi.CollectionConverters.asScala(
                        java.util.List.of(struct.dataType()))
                    .toSeq()));
      }
      if (batch.numRows() == 0) {
        continue;
      }
      // The Python reader's rows arrive as one struct column: its children are the columns.
      ArrowColumnVector vector = (ArrowColumnVector) struct;
      ColumnVector[] children = new ColumnVector[columns];
      for (int i = 0; i < columns; i++) {
        children[i] = new RunnerOwnedVector(vector.getChild(i).getValueVector());
      }
      value = new ColumnarBatch(children, batch.numRows());
      return true;
    }
    return false;
  }

  /**
   * A column of the runner's Arrow batch. The runner reloads the same vectors for its next batch
   * and frees them at the end of the stream or of the task, so Spark must not free them when it
   * is done with a batch ({@code ColumnarToRowExec} calls {@code closeIfFreeable()}, which would
   * release the buffers and drop a struct's children under the runner).
   */
  private static final class RunnerOwnedVector extends ArrowColumnVector {
    RunnerOwnedVector(org.apache.arrow.vector.ValueVector vector) {
      super(vector);
    }

    @Override
    public void closeIfFreeable() {}
  }

  @Override
  public ColumnarBatch get() {
    totals[ScanMetrics.I_ROWS_AFTER] += value.numRows();
    return value;
  }

  @Override
  public void close() {
    value = null;
  }

  @Override
  public CustomTaskMetric[] currentMetricsValues() {
    Map<String, Object> values = new HashMap<>();
    scala.jdk.javaapi.CollectionConverters.asJava(metrics)
        .forEach((k, v) -> values.put(k, v.value()));
    CustomTaskMetric[] py =
        source.createPythonTaskMetrics(
            scala.collection.immutable.Map$.MODULE$.from(
                scala.jdk.javaapi.CollectionConverters.asScala(values)));
    CustomTaskMetric[] ours = ScanMetrics.values(totals);
    CustomTaskMetric[] out = new CustomTaskMetric[py.length + ours.length];
    System.arraycopy(py, 0, out, 0, py.length);
    System.arraycopy(ours, 0, out, py.length, ours.length);
    return out;
  }
}
