package org.stratalake.spark.bridge;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

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

  public static Map<String, String> toMap(JsonNode node) {
    Map<String, String> out = new HashMap<>();
    if (node != null) {
      node.properties().forEach(e -> out.put(e.getKey(), e.getValue().asText()));
    }
    return out;
  }

  public static List<String> toList(JsonNode node) {
    List<String> out = new ArrayList<>();
    if (node != null) {
      node.forEach(n -> out.add(n.asText()));
    }
    return out;
  }

  /** The elements of a JSON array, as a list. */
  public static List<JsonNode> elements(JsonNode array) {
    List<JsonNode> out = new ArrayList<>();
    array.forEach(out::add);
    return out;
  }
}
