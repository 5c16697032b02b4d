package org.stratalake.spark.bridge;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.spark.sql.catalyst.analysis.NamespaceAlreadyExistsException;
import org.apache.spark.sql.catalyst.analysis.NoSuchNamespaceException;
import org.apache.spark.sql.catalyst.analysis.NoSuchTableException;
import org.apache.spark.sql.catalyst.analysis.NonEmptyNamespaceException;
import org.apache.spark.sql.catalyst.analysis.TableAlreadyExistsException;

/**
 * Maps Python catalog errors to the exceptions Spark's analyzer expects, so that e.g.
 * CREATE TABLE IF NOT EXISTS and DROP TABLE IF EXISTS keep Spark's own semantics and messages.
 */
public final class Errors {
  private Errors() {}

  static RuntimeException fromPython(JsonNode error) {
    String type = error.path("type").asText("Error");
    String message = error.path("message").asText("");
    String[] namespace = {error.path("database").asText("")};
    String table = error.path("table").asText("");
    switch (type) {
      case "TableNotFoundError":
        return sneaky(new NoSuchTableException(namespace[0], table));
      case "TableAlreadyExistsError":
        return sneaky(new TableAlreadyExistsException(namespace[0], table));
      case "DatabaseNotFoundError":
        return sneaky(new NoSuchNamespaceException(namespace));
      case "DatabaseAlreadyExistsError":
        return sneaky(new NamespaceAlreadyExistsException(namespace));
      case "DatabaseNotEmptyError":
        return sneaky(new NonEmptyNamespaceException(namespace));
      case "UnsupportedError":
        return new UnsupportedOperationException("[STRATALAKE:" + type + "] " + message);
      default:
        String trace = error.path("traceback").asText("");
        return new StrataLakeException(type, trace.isEmpty() ? message : message + "\n" + trace);
    }
  }

  /** Spark's analysis exceptions are checked in Java's eyes; callers declare them anyway. */
  @SuppressWarnings("unchecked")
  public static <E extends Throwable> RuntimeException sneaky(Throwable e) throws E {
    throw (E) e;
  }
}
