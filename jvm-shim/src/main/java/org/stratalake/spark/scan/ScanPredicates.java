package org.stratalake.spark.scan;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.spark.sql.connector.expressions.Expression;
import org.apache.spark.sql.connector.expressions.Literal;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.unsafe.types.UTF8String;
import org.stratalake.spark.bridge.PythonBridge;

/**
 * Spark's V2 predicates as JSON trees for the Python planner (stratalake.spark.planning).
 *
 * <p>This is a faithful transcription of Spark's expression objects, nothing more: which
 * predicates are safe to prune with, and how values compare, is decided in Python. A predicate
 * this class cannot write (an unknown function, a nested column, a literal of an unusual type)
 * becomes null; Spark evaluates every filter again after the scan, so dropping one only costs
 * pruning. Inside AND a dropped conjunct just weakens the filter, which is safe unless the AND is
 * under a NOT, so negation is tracked.
 */
public final class ScanPredicates {
  private ScanPredicates() {}

  /** The JSON tree of {@code p}, or null if it cannot be written exactly enough to prune with. */
  static ObjectNode toJson(Predicate p) {
    return write(p, false);
  }

  private static ObjectNode write(Predicate p, boolean negated) {
    String name = p.name();
    Expression[] children = p.children();
    switch (name) {
      case "AND":
      case "OR":
        {
          boolean and = name.equals("AND");
          ArrayNode parts = PythonBridge.JSON.createArrayNode();
          for (Expression child : children) {
            ObjectNode node = child instanceof Predicate ? write((Predicate) child, negated) : null;
            if (node == null) {
              // A weaker AND is fine for pruning; a weaker OR or a weaker negated AND is not.
              if (!and || negated) {
                return null;
              }
              continue;
            }
            parts.add(node);
          }
          if (parts.isEmpty()) {
            return null;
          }
          ObjectNode out = PythonBridge.JSON.createObjectNode();
          out.put("op", and ? "and" : "or");
          out.set("children", parts);
          return out;
        }
      case "NOT":
        {
          ObjectNode inner =
              children.length == 1 && children[0] instanceof Predicate
                  ? write((Predicate) children[0], !negated)
                  : null;
          if (inner == null) {
            return null;
          }
          ObjectNode out = PythonBridge.JSON.createObjectNode();
          out.put("op", "not");
          out.putArray("children").add(inner);
          return out;
        }
      case "IS_NULL":
      case "IS_NOT_NULL":
        return leaf(name.toLowerCase(java.util.Locale.ROOT), children, 1, false);
      case "IN":
        return leaf("in", children, -1, false);
      case "=":
      case "<=>":
      case "<":
      case "<=":
      case ">":
      case ">=":
        if (children.length == 2 && children[0] instanceof Literal) {
          // "5 < x": Python flips the operator; the column must come first in the JSON.
          return leaf(name, new Expression[] {children[1], children[0]}, 2, true);
        }
        return leaf(name, children, 2, false);
      default:
        return null;
    }
  }

  /** {column op literal...}; {@code arity} -1 means "a column and any number of literals". */
  private static ObjectNode leaf(String op, Expression[] children, int arity, boolean flipped) {
    if (children.length == 0 || (arity > 0 && children.length != arity)) {
      return null;
    }
    if (!(children[0] instanceof NamedReference)) {
      return null;
    }
    String[] names = ((NamedReference) children[0]).fieldNames();
    if (names.length != 1) {
      return null; // nested fields are never partition or key columns
    }
    ObjectNode out = PythonBridge.JSON.createObjectNode();
    out.put("op", op);
    out.put("column", names[0]);
    if (flipped) {
      out.put("flipped", true);
    }
    ArrayNode values = out.putArray("values");
    String type = null;
    for (int i = 1; i < children.length; i++) {
      if (!(children[i] instanceof Literal)) {
        return null;
      }
      Literal<?> lit = (Literal<?>) children[i];
      type = lit.dataType().typeName();
      if (!addValue(values, lit.value())) {
        return null;
      }
    }
    if (type != null) {
      out.put("type", type);
    }
    return out;
  }

  /** Catalyst's internal literal values as JSON; false for a kind this bridge does not carry. */
  private static boolean addValue(ArrayNode values, Object v) {
    if (v == null) {
      values.addNull();
    } else if (v instanceof UTF8String) {
      values.add(v.toString());
    } else if (v instanceof Integer || v instanceof Short || v instanceof Byte) {
      values.add(((Number) v).intValue()); // dates arrive as Integer days since the epoch
    } else if (v instanceof Long) {
      values.add((Long) v);
    } else if (v instanceof Boolean) {
      values.add((Boolean) v);
    } else if (v instanceof Decimal) {
      values.add(((Decimal) v).toJavaBigDecimal().toPlainString());
    } else if (v instanceof Double || v instanceof Float) {
      values.add(((Number) v).doubleValue());
    } else {
      return false;
    }
    return true;
  }
}
