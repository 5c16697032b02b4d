package org.stratalake.spark.bridge;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.List;

/** Small conversions between Jackson trees and Java values, shared by every package. */
public final class Json {
  private Json() {}

  public static JsonNode readTree(String json) {
    try {
      return PythonBridge.JSON.readTree(json);
    } catch (java.io.IOException e) {
      throw new IllegalStateException(e);
    }
  }

  /** The elements of a JSON array, as a list. */
  public static List<JsonNode> elements(JsonNode array) {
    List<JsonNode> out = new ArrayList<>();
    array.forEach(out::add);
    return out;
  }
}
