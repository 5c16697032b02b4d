package org.stratalake.spark.scan;

import java.io.IOException;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.execution.datasources.PartitionedFile;
import org.stratalake.spark.fs.LocalLinks;
import org.apache.spark.sql.execution.datasources.v2.FilePartitionReaderFactory;
import org.apache.spark.sql.execution.datasources.v2.python.PythonPartitionReaderFactory;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.roaringbitmap.RoaringBitmap;

/**
 * Reads the scan's splits: splits that need a merge through the Python merge (as Arrow batches,
 * {@link MergedBatchReader}, or, on the row path, through Spark's Python reader factory, which this
 * wrapper only unwraps and counts), splits that need none ({@link
 * StrataLakeInputPartition#isNative()}) with Spark's own vectorized Parquet reader, file after
 * file, with no Python involved.
 *
 * <p>Spark requires every partition of a scan to agree on columnar reads. The rule: the scan is
 * columnar when Spark's Parquet reader returns batches for the read schema (if any split is
 * native) and the columnar merged path is on (if any split needs a merge; SQL setting {@value
 * MergedBatchReader#ENABLED}); otherwise every split is handed over row by row.
 */
public final class StrataLakeReaderFactory implements PartitionReaderFactory {
  private static final long serialVersionUID = 1L;

  /** Null when every split is native. */
  private final PartitionReaderFactory python;
  /** The Python reader in "superseded" mode ({@link SupersededRows}); null when no split needs it. */
  private final PartitionReaderFactory positions;
  /** Spark's Parquet reader factory for the read schema; null when no split is native. */
  private final FilePartitionReaderFactory parquet;
  /**
   * For files with deleted or superseded rows, read whole so positions count: the same reader
   * without pushed filters; null when no file has such rows, or when {@link #indexed} reads them.
   */
  private final FilePartitionReaderFactory unfiltered;
  /**
   * For such files in batches: the same reader, filters pushed, with Spark's row index column
   * last ({@link NativeParquet#withRowIndex}); null when unused.
   */
  private final FilePartitionReaderFactory indexed;

  private final boolean columnar;

  StrataLakeReaderFactory(
      PartitionReaderFactory python,
      PartitionReaderFactory positions,
      FilePartitionReaderFactory parquet,
      FilePartitionReaderFactory unfiltered,
      FilePartitionReaderFactory indexed,
      boolean columnar) {
    this.python = python;
    this.positions = positions;
    this.parquet = parquet;
    this.unfiltered = unfiltered;
    this.indexed = indexed;
    this.columnar = columnar;
  }

  @Override
  public boolean supportColumnarReads(InputPartition partition) {
    return columnar;
  }

  @Override
  public PartitionReader<InternalRow> createReader(InputPartition partition) {
    StrataLakeInputPartition split = (StrataLakeInputPartition) partition;
    if (split.isNative()) {
      if (indexed != null) {
        throw new IllegalStateException("stratalake: row read of a scan whose batches index rows");
      }
      return new NativeRowReader(parquet, unfiltered, superseded(split), split);
    }
    return new MeteredReader(python.createReader(split.python), split);
  }

  @Override
  public PartitionReader<ColumnarBatch> createColumnarReader(InputPartition partition) {
    StrataLakeInputPartition split = (StrataLakeInputPartition) partition;
    if (!columnar) {
      throw new IllegalStateException("stratalake: columnar read of a row-based scan");
    }
    if (!split.isNative()) {
      return new MergedBatchReader(
          (PythonPartitionReaderFactory) python, split.python, openTotals(split));
    }
    return indexed != null
        ? new NativeBatchReader(parquet, indexed, true, superseded(split), split)
        : new NativeBatchReader(parquet, unfiltered, false, superseded(split), split);
  }

  /** The superseded rows of each file of a key-merged native split; null for other splits. */
  private RoaringBitmap[] superseded(StrataLakeInputPartition split) {
    return split.superseded == null
        ? null
        : SupersededRows.read((PythonPartitionReaderFactory) positions, split);
  }

  private static long[] openTotals(StrataLakeInputPartition split) {
    long[] totals = ScanMetrics.taskTotals();
    totals[ScanMetrics.I_FILES] += split.files;
    totals[ScanMetrics.I_BYTES] += split.bytes;
    totals[ScanMetrics.I_RUNS] += split.runs;
    totals[ScanMetrics.I_ROWS_BEFORE] += split.rows;
    totals[split.isNative() ? ScanMetrics.I_NATIVE_SPLITS : ScanMetrics.I_PYTHON_SPLITS] += split.splits;
    totals[ScanMetrics.I_KEY_MERGED_SPLITS] += split.keyMergedSplits;
    return totals;
  }

  private static final class MeteredReader implements PartitionReader<InternalRow> {
    private final PartitionReader<InternalRow> delegate;
    private final long[] totals;

    MeteredReader(PartitionReader<InternalRow> delegate, StrataLakeInputPartition split) {
      this.delegate = delegate;
      this.totals = openTotals(split);
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

  /**
   * The files of a native split one after the other, each through Spark's Parquet reader (which
   * reads the requested columns by name; the planner made sure the file has the table's schema).
   * A file with a deletion vector (or superseded rows, {@link SupersededRows}) is read by {@code
   * positioned}: without pushed filters, so every row group is decoded and a row's position in
   * the file is its count, or ({@code indexed}) with Spark's row index column; deleted positions
   * are dropped.
   */
  private abstract static class NativeReader<T> implements PartitionReader<T> {
    private final FilePartitionReaderFactory parquet;
    private final FilePartitionReaderFactory positioned;
    /** Whether {@link #positioned}'s rows carry their position in a last column. */
    private final boolean indexed;
    private final StrataLakeInputPartition.NativeFile[] files;
    /** Per file, the rows the split's merge drops (null: not a key-merged split, or none). */
    private final RoaringBitmap[] superseded;
    final long[] totals;
    private int next;
    private PartitionReader<T> current;
    /** The current file's deleted positions, or null. */
    RoaringBitmap deleted;
    /** Position in the current file of the next row the Parquet reader returns (unindexed). */
    long position;
    /** Whether the current file's rows carry their position in a last column. */
    boolean indexedRows;

    NativeReader(
        FilePartitionReaderFactory parquet,
        FilePartitionReaderFactory positioned,
        boolean indexed,
        RoaringBitmap[] superseded,
        StrataLakeInputPartition split) {
      this.parquet = parquet;
      this.positioned = positioned;
      this.indexed = indexed;
      this.files = split.nativeFiles;
      this.superseded = superseded;
      this.totals = openTotals(split);
    }

    abstract PartitionReader<T> open(FilePartitionReaderFactory parquet, PartitionedFile file);

    /** Takes the Parquet reader's current value; false when nothing of it is left. */
    abstract boolean accept(T value);

    @Override
    public boolean next() throws IOException {
      while (true) {
        if (current != null) {
          if (current.next()) {
            if (accept(current.get())) {
              return true;
            }
            continue;
          }
          current.close();
          current = null;
        }
        if (next >= files.length) {
          return false;
        }
        StrataLakeInputPartition.NativeFile f = files[next++];
        LocalLinks.refuseRead(f.path);
        if (f.dvPath != null) {
          LocalLinks.refuseRead(f.dvPath);
        }
        PartitionedFile file = NativeParquet.wholeFile(f.path, f.size);
        deleted = f.dvPath == null ? null : DeletionVectors.read(f, conf());
        if (superseded != null && superseded[next - 1] != null) {
          // (the planner sends no split with both; a union keeps both right regardless)
          deleted =
              deleted == null
                  ? superseded[next - 1]
                  : RoaringBitmap.or(deleted, superseded[next - 1]);
        }
        position = 0;
        indexedRows = deleted != null && indexed;
        current = open(deleted == null ? parquet : positioned, file);
      }
    }

    private org.apache.hadoop.conf.Configuration conf() {
      return ((org.apache.spark.sql.execution.datasources.v2.parquet.ParquetPartitionReaderFactory)
              positioned)
          .broadcastedConf()
          .value()
          .value();
    }

    @Override
    public void close() throws IOException {
      if (current != null) {
        current.close();
        current = null;
      }
    }

    @Override
    public CustomTaskMetric[] currentMetricsValues() {
      return ScanMetrics.values(totals);
    }
  }

  private static final class NativeBatchReader extends NativeReader<ColumnarBatch> {
    private ColumnarBatch value;
    private ColumnarBatch copy;
    private int[] keep;
    /** Whether every batch goes out as a view (the scan has deleted or superseded rows). */
    private final boolean views;
    /** 0, 1, 2, ...: the positions of a view of every row. */
    private int[] identity;

    NativeBatchReader(
        FilePartitionReaderFactory parquet,
        FilePartitionReaderFactory positioned,
        boolean indexed,
        RoaringBitmap[] superseded,
        StrataLakeInputPartition split) {
      super(parquet, positioned, indexed, superseded, split);
      // (the scan makes the positioned reader exactly when some file has deleted or superseded rows)
      this.views = positioned != null;
    }

    @Override
    PartitionReader<ColumnarBatch> open(FilePartitionReaderFactory parquet, PartitionedFile file) {
      return parquet.buildColumnarReader(file);
    }

    @Override
    boolean accept(ColumnarBatch batch) {
      if (indexedRows) {
        return acceptIndexed(batch);
      }
      int n = batch.numRows();
      long start = position;
      position += n;
      if (deleted == null || deleted.rangeCardinality(start, start + n) == 0) {
        if (views && n > 0) {
          // A scan that has any deleted rows hands Spark views only (here of every row), so its
          // batches are of one kind (StrataLakeScan.vectorClass).
          if (identity == null || identity.length < n) {
            identity = new int[n];
            for (int i = 0; i < n; i++) {
              identity[i] = i;
            }
          }
          copy = DeletionVectors.select(batch, identity, n);
          value = copy;
          return true;
        }
        value = batch;
        return n > 0;
      }
      if (keep == null || keep.length < n) {
        keep = new int[n];
      }
      int kept = DeletionVectors.live(deleted, start, n, keep);
      if (kept == 0) {
        return false;
      }
      // A view of the kept rows (no copy), valid until the Parquet reader's next batch, which is
      // exactly as long as Spark may use the batch this reader returns.
      copy = DeletionVectors.select(batch, keep, kept);
      value = copy;
      return true;
    }

    /** A batch whose last column is each row's position in its file: its live rows, that column left out. */
    private boolean acceptIndexed(ColumnarBatch batch) {
      int n = batch.numRows();
      if (n == 0) {
        return false;
      }
      if (keep == null || keep.length < n) {
        keep = new int[n];
      }
      int columns = batch.numCols() - 1;
      org.apache.spark.sql.vectorized.ColumnVector index = batch.column(columns);
      long first = index.getLong(0);
      int kept;
      if (index.getLong(n - 1) - first == n - 1) {
        kept = DeletionVectors.live(deleted, first, n, keep); // consecutive rows
      } else {
        kept = 0;
        for (int i = 0; i < n; i++) {
          if (!deleted.contains((int) index.getLong(i))) {
            keep[kept++] = i;
          }
        }
      }
      if (kept == 0) {
        return false;
      }
      copy = DeletionVectors.select(batch, keep, kept, columns);
      value = copy;
      return true;
    }

    @Override
    public ColumnarBatch get() {
      totals[ScanMetrics.I_ROWS_AFTER] += value.numRows();
      return value;
    }

    @Override
    public void close() throws IOException {
      super.close();
      if (copy != null) {
        copy.close();
        copy = null;
      }
    }
  }

  private static final class NativeRowReader extends NativeReader<InternalRow> {
    private InternalRow value;

    NativeRowReader(
        FilePartitionReaderFactory parquet,
        FilePartitionReaderFactory unfiltered,
        RoaringBitmap[] superseded,
        StrataLakeInputPartition split) {
      super(parquet, unfiltered, false, superseded, split);
    }

    @Override
    PartitionReader<InternalRow> open(FilePartitionReaderFactory parquet, PartitionedFile file) {
      return parquet.buildReader(file);
    }

    @Override
    boolean accept(InternalRow row) {
      long p = position++;
      value = row;
      return deleted == null || !deleted.contains((int) p);
    }

    @Override
    public InternalRow get() {
      totals[ScanMetrics.I_ROWS_AFTER]++;
      return value;
    }
  }
}
