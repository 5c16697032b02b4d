package org.stratalake.spark.bridge;

/**
 * An error raised on purpose by the Python core, carried to the user unchanged.
 *
 * <p>It extends IllegalArgumentException because PySpark converts that class into a readable
 * Python exception (message only, no JVM stack); most core errors are bad input anyway. The
 * message starts with "[STRATALAKE:&lt;PythonErrorClass&gt;]" so Python can map it back.
 */
public class StrataLakeException extends IllegalArgumentException {
  private static final long serialVersionUID = 1L;
  private final String errorClass;

  public StrataLakeException(String errorClass, String message) {
    super("[STRATALAKE:" + errorClass + "] " + message);
    this.errorClass = errorClass;
  }

  /** The Python exception class name, e.g. "InvalidOptionError". */
  public String errorClass() {
    return errorClass;
  }
}
