package org.stratalake.spark.scan;

import java.util.function.Function;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.metric.CustomMetric;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.read.SupportsPushDownRequiredColumns;
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream;
import org.apache.spark.sql.execution.datasources.v2.python.PythonInputPartition;
import org.apache.spark.sql.execution.datasources.v2.python.PythonPartitionReaderFactory;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.stratalake.spark.bridge.Messages;

/**
 * Batch reads of the system tables that hold the table's rows ({@code $audit_log}, {@code
 * $binlog}, {@code $ro}): Spark's own Python scan (planning, pickled reader, partitions unchanged),
 * with each partition's Arrow stream handed to Spark as columnar batches ({@link
 * MergedBatchReader}) instead of Spark's per-row conversion of the same batches, which costs more
 * than the Python read itself on an incremental read of millions of change records.
 */
public final class ColumnarPythonScans {
  private ColumnarPythonScans() {}

  /**
   * The scan of {@code python} (Spark's Python scan builder of a read schema), read columnar and
   * pruned to the columns the query uses, unless the session turned the columnar merged path off.
   * With {@code changes} (the data source options of an {@code $audit_log} table, null for others)
   * and native reads on, an incremental read Python plans as change files is read by Spark's
   * Parquet reader instead ({@link NativeChanges}).
   */
  public static ScanBuilder wrap(
      StructType schema,
      Function<StructType, ScanBuilder> python,
      java.util.Map<String, String> changes) {
    if (!MergedBatchReader.enabled()) {
      return python.apply(schema);
    }
    boolean nativeChanges = changes != null && NativeParquet.enabled(changes);
    return new Builder(schema, python, nativeChanges ? changes : null);
  }

  private static final class Builder implements ScanBuilder, SupportsPushDownRequiredColumns {
    private final Function<StructType, ScanBuilder> python;
    private final java.util.Map<String, String> changes;
    private StructType schema;

    Builder(
        StructType schema,
        Function<StructType, ScanBuilder> python,
        java.util.Map<String, String> changes) {
      this.schema = schema;
      this.python = python;
      this.changes = changes;
    }

    @Override
    public void pruneColumns(StructType required) {
      // The Python reader returns the columns of the schema it is given, by name; only those are
      // handed over. A query that uses no column (count(*)) keeps them all: a batch without
      // columns would carry no row count.
      if (required.fields().length > 0) {
        schema = required;
      }
    }

    @Override
    public Scan build() {
      return new ColumnarScan(python.apply(schema).build(), changes);
    }
  }

  private static final class ColumnarScan implements Scan {
    private final Scan delegate;
    private final java.util.Map<String, String> changes;
    private boolean planned;
    private java.util.List<java.util.List<Messages.NativeFile>> natives;

    ColumnarScan(Scan delegate, java.util.Map<String, String> changes) {
      this.delegate = delegate;
      this.changes = changes;
    }

    @Override
    public StructType readSchema() {
      return delegate.readSchema();
    }

    @Override
    public String description() {
      // (once planned: the executed plan says which reader read the change files)
      return planned && natives != null
          ? delegate.description() + " [native change files]"
          : delegate.description();
    }

    /**
     * The native plan (planned once, when Spark first asks for the batch's partitions: a batch
     * read only, streams never get here); null when Python reads.
     */
    private java.util.List<java.util.List<Messages.NativeFile>> natives() {
      if (!planned) {
        natives = changes == null ? null : NativeChanges.plan(changes, readSchema());
        planned = true;
      }
      return natives;
    }

    @Override
    public Batch toBatch() {
      Batch batch = delegate.toBatch();
      return new Batch() {
        @Override
        public InputPartition[] planInputPartitions() {
          return natives() != null
              ? NativeChanges.partitions(natives())
              : batch.planInputPartitions();
        }

        @Override
        public PartitionReaderFactory createReaderFactory() {
          return natives() != null
              ? NativeChanges.readerFactory(readSchema())
              : new Factory((PythonPartitionReaderFactory) batch.createReaderFactory());
        }
      };
    }

    @Override
    public MicroBatchStream toMicroBatchStream(String checkpointLocation) {
      return delegate.toMicroBatchStream(checkpointLocation); // $audit_log streams: Spark's path
    }

    @Override
    public CustomMetric[] supportedCustomMetrics() {
      return delegate.supportedCustomMetrics();
    }
  }

  private static final class Factory implements PartitionReaderFactory {
    private final PythonPartitionReaderFactory python;

    Factory(PythonPartitionReaderFactory python) {
      this.python = python;
    }

    @Override
    public boolean supportColumnarReads(InputPartition partition) {
      return true;
    }

    @Override
    public PartitionReader<InternalRow> createReader(InputPartition partition) {
      return python.createReader(partition); // not reached: every partition reads columnar
    }

    @Override
    public PartitionReader<ColumnarBatch> createColumnarReader(InputPartition partition) {
      return new MergedBatchReader(
          python, (PythonInputPartition) partition, ScanMetrics.taskTotals());
    }
  }
}
