package org.stratalake.spark.write;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.connector.expressions.Expression;
import org.apache.spark.sql.connector.expressions.Literal;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.stratalake.spark.bridge.PythonBridge;

/**
 * Spark V2 predicates as JSON for Python: {"name", "children"} with {"ref": column} and
 * {"literal": value, "type": typeName} leaves. Catalyst's internal literal values are printed
 * (UTF8String, days, micros...); Python rebuilds typed values and decides what the predicates mean.
 */
public final class PredicateJson {
  private PredicateJson() {}

  /** The predicates as a JSON array, or null if one holds something other than columns/literals. */
  public static List<JsonNode> toJson(Predicate[] predicates) {
    List<JsonNode> out = new ArrayList<>();
    for (Predicate p : predicates) {
      ObjectNode node = expression(p);
      if (node == null) {
        return null;
      }
      out.add(node);
    }
    return out;
  }

  private static ObjectNode expression(Expression e) {
    ObjectNode node = PythonBridge.JSON.createObjectNode();
    if (e instanceof NamedReference) {
      String[] names = ((NamedReference) e).fieldNames();
      if (names.length != 1) {
        return null; // nested fields are never partition or key columns
      }
      node.put("ref", names[0]);
      return node;
    }
    if (e instanceof Predicate) {
      Predicate p = (Predicate) e;
      node.put("name", p.name());
      ArrayNode children = node.putArray("children");
      for (Expression child : p.children()) {
        ObjectNode c = expression(child);
        if (c == null) {
          return null;
        }
        children.add(c);
      }
      return node;
    }
    // After Predicate: AlwaysTrue/AlwaysFalse are predicates that are also literals.
    if (e instanceof Literal) {
      Literal<?> lit = (Literal<?>) e;
      node.put("literal", lit.value() == null ? null : lit.value().toString());
      node.put("type", lit.dataType().typeName());
      return node;
    }
    return null;
  }
}
