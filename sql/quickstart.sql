-- stratalake quickstart: primary-key tables with each merge engine, from Spark SQL.
-- Run with: stratalake sql --warehouse ./warehouse -f sql/quickstart.sql   (or: make demo)

CREATE DATABASE IF NOT EXISTS quickstart;
USE quickstart;

-- 1. deduplicate (the default engine): the last write of a key wins -----------------------------
DROP TABLE IF EXISTS orders;
CREATE TABLE orders (
  order_id BIGINT,
  customer STRING,
  amount   DECIMAL(10, 2),
  dt       STRING,
  PRIMARY KEY (order_id, dt) NOT ENFORCED
) PARTITIONED BY (dt) WITH ('bucket' = '2');

INSERT INTO orders VALUES
  (1, 'alice', 10.00, '2024-01-01'),
  (2, 'bob',   20.00, '2024-01-01'),
  (3, 'carol', 30.00, '2024-01-02');

-- an update is a re-insert of the same key (snapshot 2)
INSERT INTO orders VALUES (2, 'bob', 25.50, '2024-01-01');

SELECT 'deduplicate: order 2 now 25.50 (order_id, customer, amount, dt)' AS step;
SELECT * FROM orders ORDER BY order_id;

SELECT 'time travel: snapshot 1 still has 20.00' AS step;
SELECT * FROM orders VERSION AS OF 1 ORDER BY order_id;

SELECT 'partition and key filters are pushed down' AS step;
SELECT * FROM orders WHERE dt = '2024-01-01' AND order_id = 2;

-- 2. partial-update: non-null fields fill in the row ---------------------------------------------
DROP TABLE IF EXISTS product;
CREATE TABLE product (
  id          BIGINT,
  price       DOUBLE,
  sales       BIGINT,
  description STRING,
  PRIMARY KEY (id) NOT ENFORCED
) WITH ('merge-engine' = 'partial-update');

INSERT INTO product VALUES (1, 23.0, 10, NULL);
INSERT INTO product VALUES (1, NULL, NULL, 'This is a book');
INSERT INTO product VALUES (1, 25.2, NULL, NULL);

SELECT 'partial-update: expect <1, 25.2, 10, This is a book>' AS step;
SELECT * FROM product;

-- 3. aggregation: each field has its own aggregate function --------------------------------------
DROP TABLE IF EXISTS product_stats;
CREATE TABLE product_stats (
  id    BIGINT,
  price DOUBLE,
  sales BIGINT,
  PRIMARY KEY (id) NOT ENFORCED
) WITH (
  'merge-engine' = 'aggregation',
  'fields.price.aggregate-function' = 'max',
  'fields.sales.aggregate-function' = 'sum'
);

INSERT INTO product_stats VALUES (1, 23.0, 15);
INSERT INTO product_stats VALUES (1, 30.2, 20);

SELECT 'aggregation: expect <1, 30.2, 35>' AS step;
SELECT * FROM product_stats;

-- 4. first-row: the first write of a key is kept -------------------------------------------------
DROP TABLE IF EXISTS first_seen;
CREATE TABLE first_seen (
  user_id BIGINT,
  page    STRING,
  PRIMARY KEY (user_id) NOT ENFORCED
) WITH ('merge-engine' = 'first-row');

INSERT INTO first_seen VALUES (7, 'home');
INSERT INTO first_seen VALUES (7, 'checkout');

SELECT 'first-row: expect <7, home>' AS step;
SELECT * FROM first_seen;

-- the table definitions round-trip
SHOW CREATE TABLE product_stats;
SHOW TABLES;
