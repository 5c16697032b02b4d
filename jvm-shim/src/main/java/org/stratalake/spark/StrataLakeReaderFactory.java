package org.stratalake.spark;

import java.io.IOException;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;

/**
 * Spark's Python reader factory with the scan's metrics added: each split is still read (and
 * merged) by the Python data source; this wrapper only unwraps the partition and counts rows.
 */
final class StrataLakeReaderFactory implements PartitionReaderFactory {
  private static final long serialVersionUID = 1L;

  private final PartitionReaderFactory python;

  StrataLakeReaderFactory(PartitionReaderFactory python) {
    this.python = python;
  }

  @Override
  public PartitionReader<InternalRow> createReader(InputPartition partition) {
    StrataLakeInputPartition split = (StrataLakeInputPartition) partition;
    return new MeteredReader(python.createReader(split.python), split);
  }

  private static final class MeteredReader implements PartitionReader<InternalRow> {
    private final PartitionReader<InternalRow> delegate;
    private final long[] totals;

    MeteredReader(PartitionReader<InternalRow> delegate, StrataLakeInputPartition split) {
      this.delegate = delegate;
      this.totals = ScanMetrics.taskTotals();
      totals[ScanMetrics.I_FILES] += split.files;
      totals[ScanMetrics.I_BYTES] += split.bytes;
      totals[ScanMetrics.I_RUNS] += split.runs;
      totals[ScanMetrics.I_ROWS_BEFORE] += split.rows;
    }

    @Override
    public boolean next() throws IOException {
      return delegate.next();
    }

    @Override
    public InternalRow get() {
      totals[ScanMetrics.I_ROWS_AFTER]++;
      return delegate.get();
    }

    @Override
    public void close() throws IOException {
      delegate.close();
    }

    @Override
    public CustomTaskMetric[] currentMetricsValues() {
      // Python's own metrics (data sent/received by the worker) stay visible next to ours.
      CustomTaskMetric[] py = delegate.currentMetricsValues();
      CustomTaskMetric[] ours = ScanMetrics.values(totals);
      CustomTaskMetric[] out = new CustomTaskMetric[py.length + ours.length];
      System.arraycopy(py, 0, out, 0, py.length);
      System.arraycopy(ours, 0, out, py.length, ours.length);
      return out;
    }
  }
}
