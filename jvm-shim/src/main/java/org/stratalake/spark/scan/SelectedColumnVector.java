package org.stratalake.spark.scan;

import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarArray;
import org.apache.spark.sql.vectorized.ColumnarMap;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * A view of the rows {@code keep[0..n)} of another column vector, without copying them: the
 * live rows of a Parquet batch after its deletion vector. Copying every batch that holds a
 * deleted row (with 10% of the keys updated, every batch) cost more than decoding it; a view costs
 * one index lookup per value read. The source belongs to the Parquet reader, which reuses it for
 * its next batch, so a view is valid exactly as long as the batch it was made from, and closing
 * it frees nothing.
 *
 * <p>Public because a scan whose every batch comes as such views names this class to Spark's code
 * generator ({@code TypedBatchScanExec}), whose generated code then casts to it.
 */
public final class SelectedColumnVector extends ColumnVector {
  private final ColumnVector source;
  private final int[] keep;
  private final int rows;

  SelectedColumnVector(ColumnVector source, int[] keep, int rows) {
    super(source.dataType());
    this.source = source;
    this.keep = keep;
    this.rows = rows;
  }

  @Override
  public void close() {}

  @Override
  public boolean hasNull() {
    return source.hasNull();
  }

  @Override
  public int numNulls() {
    if (!source.hasNull()) {
      return 0;
    }
    int nulls = 0;
    for (int i = 0; i < rows; i++) {
      nulls += source.isNullAt(keep[i]) ? 1 : 0;
    }
    return nulls;
  }

  @Override
  public boolean isNullAt(int rowId) {
    return source.isNullAt(keep[rowId]);
  }

  @Override
  public boolean getBoolean(int rowId) {
    return source.getBoolean(keep[rowId]);
  }

  @Override
  public byte getByte(int rowId) {
    return source.getByte(keep[rowId]);
  }

  @Override
  public short getShort(int rowId) {
    return source.getShort(keep[rowId]);
  }

  @Override
  public int getInt(int rowId) {
    return source.getInt(keep[rowId]);
  }

  @Override
  public long getLong(int rowId) {
    return source.getLong(keep[rowId]);
  }

  @Override
  public float getFloat(int rowId) {
    return source.getFloat(keep[rowId]);
  }

  @Override
  public double getDouble(int rowId) {
    return source.getDouble(keep[rowId]);
  }

  @Override
  public ColumnarArray getArray(int rowId) {
    return source.getArray(keep[rowId]);
  }

  @Override
  public ColumnarMap getMap(int rowId) {
    return source.getMap(keep[rowId]);
  }

  @Override
  public Decimal getDecimal(int rowId, int precision, int scale) {
    return source.getDecimal(keep[rowId], precision, scale);
  }

  @Override
  public UTF8String getUTF8String(int rowId) {
    return source.getUTF8String(keep[rowId]);
  }

  @Override
  public byte[] getBinary(int rowId) {
    return source.getBinary(keep[rowId]);
  }

  @Override
  public ColumnVector getChild(int ordinal) {
    // A struct's fields are read through its children at the struct's row ids.
    return new SelectedColumnVector(source.getChild(ordinal), keep, rows);
  }
}
