package org.stratalake.spark.scan;

import java.io.DataInputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.zip.CRC32;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.roaringbitmap.PeekableIntIterator;
import org.roaringbitmap.RoaringBitmap;

/**
 * Paimon deletion vectors for native reads (docs/format.md section 10): reading one from its
 * index file, and keeping the live rows of a batch.
 */
public final class DeletionVectors {
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
    // The size comes from metadata and the file: it is checked against the file's length before
    // anything is allocated, so a crafted vector fails instead of asking for gigabytes.
    long fileLength = fs.getFileStatus(path).getLen();
    try (FSDataInputStream in = fs.open(path)) {
      in.seek(file.dvOffset);
      DataInputStream data = new DataInputStream(in);
      size = data.readInt();
      if (size != file.dvLength || size < 4 || file.dvOffset + 8L + size > fileLength) {
        throw new IOException(
            "deletion vector of " + file.path + " in " + file.dvPath + " is corrupt: size " + size
                + ", expected " + file.dvLength + ", at offset " + file.dvOffset + " of a file of "
                + fileLength + " bytes");
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

  /**
   * Positions (relative to {@code start}) of the rows of {@code [start, start + n)} that are not
   * in {@code deleted}, into {@code keep}; returns how many. Walks the deleted positions of the
   * range only, copying the runs of live positions between them.
   */
  static int live(RoaringBitmap deleted, long start, int n, int[] keep) {
    PeekableIntIterator it = deleted.getIntIterator();
    it.advanceIfNeeded((int) start);
    int kept = 0;
    int next = 0;
    while (it.hasNext()) {
      int d = (int) (it.peekNext() - start);
      if (d >= n) {
        break;
      }
      it.next();
      while (next < d) {
        keep[kept++] = next++;
      }
      next = d + 1;
    }
    while (next < n) {
      keep[kept++] = next++;
    }
    return kept;
  }

  /** The rows {@code keep[0..n)} of {@code batch}, as views valid while {@code batch} is. */
  static ColumnarBatch select(ColumnarBatch batch, int[] keep, int n) {
    return select(batch, keep, n, batch.numCols());
  }

  /** {@link #select} of the first {@code columns} columns only. */
  static ColumnarBatch select(ColumnarBatch batch, int[] keep, int n, int columns) {
    ColumnVector[] out = new ColumnVector[columns];
    for (int c = 0; c < out.length; c++) {
      out[c] = new SelectedColumnVector(batch.column(c), keep, n);
    }
    return new ColumnarBatch(out, n);
  }
}
