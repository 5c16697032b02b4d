package org.stratalake.spark.scan;

import org.apache.spark.sql.execution.datasources.v2.python.PythonPartitionReaderFactory;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.roaringbitmap.RoaringBitmap;

/**
 * The rows a split's merge drops, for a native read of a split that needs a merge whose engine
 * only picks rows (deduplicate): Python merges the split's key, sequence and row-kind columns
 * ({@code TableRead.superseded_positions}) and returns, per file of the split, the positions of
 * the records a newer one replaces or a delete removes; the native reader then reads every file
 * whole and drops them, as it drops a deletion vector's rows. Which record wins stays decided in
 * Python; this class only collects positions.
 */
public final class SupersededRows {
  /** The Python reader's schema in "superseded" mode: file index in the split, row position. */
  static final StructType SCHEMA =
      new StructType(
          new StructField[] {
            DataTypes.createStructField("_stratalake_file", DataTypes.IntegerType, false),
            DataTypes.createStructField("_stratalake_pos", DataTypes.IntegerType, false)
          });

  private SupersededRows() {}

  /**
   * Runs the Python side for the key-merged splits of {@code split} (through Spark's Arrow
   * runner, as a merged read does) and returns the superseded positions of each of its native
   * files, or null for a file with none.
   */
  static RoaringBitmap[] read(PythonPartitionReaderFactory python, StrataLakeInputPartition split) {
    int files = split.nativeFiles.length;
    RoaringBitmap[] out = new RoaringBitmap[files];
    // (the runner's row counts are not the scan's output rows: count them nowhere)
    MergedBatchReader reader =
        new MergedBatchReader(python, split.superseded, ScanMetrics.scratch());
    int[] run = new int[0];
    try {
      while (reader.next()) {
        ColumnarBatch batch = reader.get();
        ColumnVector file = batch.column(0);
        ColumnVector pos = batch.column(1);
        int n = batch.numRows();
        if (run.length < n) {
          run = new int[n];
        }
        // Consecutive rows of one file are added at once (addN is cheaper than add per row).
        int i = 0;
        while (i < n) {
          int f = file.getInt(i);
          if (f < 0 || f >= files) {
            throw new IllegalStateException(
                "stratalake: superseded row of file " + f + " in a split of " + files + " files");
          }
          int k = 0;
          while (i < n && file.getInt(i) == f) {
            run[k++] = pos.getInt(i++);
          }
          if (out[f] == null) {
            out[f] = new RoaringBitmap();
          }
          out[f].addN(run, 0, k);
        }
      }
    } finally {
      reader.close();
    }
    return out;
  }
}
