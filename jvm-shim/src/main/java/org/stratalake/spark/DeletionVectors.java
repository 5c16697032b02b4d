package org.stratalake.spark;

import java.io.DataInputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.zip.CRC32;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.execution.vectorized.OnHeapColumnVector;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.types.TimestampType;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.roaringbitmap.RoaringBitmap;

/**
 * Paimon deletion vectors for native reads (docs/format.md section 10): reading one from its
 * index file, and keeping the live rows of a batch.
 */
final class DeletionVectors {
  /** Java {@code BitmapDeletionVector.MAGIC_NUMBER}: a 32-bit RoaringBitmap vector. */
  private static final int MAGIC = 1581511376;

  private DeletionVectors() {}

  /**
   * The deleted positions of {@code file}: at the vector's offset, int32 BE size (4 + bitmap
   * bytes), int32 BE magic, the bitmap in RoaringBitmap's portable serialization, int32 BE CRC32
   * over magic and bitmap.
   */
  static RoaringBitmap read(StrataLakeInputPartition.NativeFile file, Configuration conf)
      throws IOException {
    Path path = new Path(file.dvPath);
    FileSystem fs = path.getFileSystem(conf);
    byte[] body;
    int size;
    int crc;
    try (FSDataInputStream in = fs.open(path)) {
      in.seek(file.dvOffset);
      DataInputStream data = new DataInputStream(in);
      size = data.readInt();
      if (size != file.dvLength || size < 4) {
        throw new IOException(
            "deletion vector of " + file.path + ": size " + size + ", expected " + file.dvLength);
      }
      body = new byte[size];
      data.readFully(body);
      crc = data.readInt();
    }
    ByteBuffer buf = ByteBuffer.wrap(body);
    int magic = buf.getInt();
    if (magic != MAGIC) {
      throw new IOException(
          "deletion vector of " + file.path + ": magic " + magic + " is not a 32-bit vector");
    }
    CRC32 check = new CRC32();
    check.update(body);
    if ((int) check.getValue() != crc) {
      throw new IOException("deletion vector of " + file.path + ": checksum mismatch");
    }
    RoaringBitmap bitmap = new RoaringBitmap();
    bitmap.deserialize(buf.slice());
    return bitmap;
  }

  /** A new batch of the rows {@code keep[0..n)} of {@code batch} (on-heap copies). */
  static ColumnarBatch select(ColumnarBatch batch, int[] keep, int n) {
    ColumnVector[] out = new ColumnVector[batch.numCols()];
    for (int c = 0; c < out.length; c++) {
      ColumnVector src = batch.column(c);
      DataType type = src.dataType();
      OnHeapColumnVector dst = new OnHeapColumnVector(n, type);
      for (int i = 0; i < n; i++) {
        int r = keep[i];
        if (src.isNullAt(r)) {
          dst.putNull(i);
        } else if (type instanceof BooleanType) {
          dst.putBoolean(i, src.getBoolean(r));
        } else if (type instanceof ByteType) {
          dst.putByte(i, src.getByte(r));
        } else if (type instanceof ShortType) {
          dst.putShort(i, src.getShort(r));
        } else if (type instanceof IntegerType || type instanceof DateType) {
          dst.putInt(i, src.getInt(r));
        } else if (type instanceof LongType
            || type instanceof TimestampType
            || type instanceof TimestampNTZType) {
          dst.putLong(i, src.getLong(r));
        } else if (type instanceof FloatType) {
          dst.putFloat(i, src.getFloat(r));
        } else if (type instanceof DoubleType) {
          dst.putDouble(i, src.getDouble(r));
        } else if (type instanceof DecimalType) {
          DecimalType d = (DecimalType) type;
          dst.putDecimal(i, src.getDecimal(r, d.precision(), d.scale()), d.precision());
        } else if (type instanceof StringType) {
          dst.putByteArray(i, src.getUTF8String(r).getBytes());
        } else if (type instanceof BinaryType) {
          dst.putByteArray(i, src.getBinary(r));
        } else {
          // The planner only sends flat types it lists as native (planning._NATIVE_TYPES).
          throw new IllegalStateException("stratalake: no native copy of " + type);
        }
      }
      out[c] = dst;
    }
    return new ColumnarBatch(out, n);
  }
}
