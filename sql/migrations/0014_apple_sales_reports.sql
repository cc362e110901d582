-- shopledger: additive
-- Apple's daily Summary Sales Reports (Sales and Trends, SALES / SUMMARY / DAILY), imported as Apple
-- sent them, to check the ledger against (issue 28; docs/finance.md).
--
-- - `apple_sales_reports`: one row per imported file. A file's identity is the SHA-256 of its
--   uncompressed bytes: importing the same content again applies once. A different file for a date
--   already imported is kept too (nothing is ever replaced); the comparison reads the NEWEST import
--   of a date (highest report_id), and says which one it read.
-- - `apple_sales_report_rows`: the report's rows, one per line of the file, amounts as integer
--   milliunits in the row's currency (Apple gives per-unit amounts with at most 3 decimals).
-- Append-only like the ledger: UPDATE, DELETE and TRUNCATE are refused by trigger, enabled ALWAYS.

CREATE TABLE apple_sales_reports (
    report_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- The Begin Date (= End Date) of every row: a daily report covers one Pacific-time day.
    report_date date NOT NULL,
    provider text,
    provider_country text,
    -- The Summary Sales Report version inferred from the header's columns (1_0 .. 1_3).
    format_version text NOT NULL CHECK (format_version ~ '^1_[0-9]$'),
    -- The header line as Apple sent it (the columns, tab-separated).
    header text NOT NULL,
    file_name text NOT NULL CHECK (length(file_name) BETWEEN 1 AND 255),
    content_sha256 bytea NOT NULL UNIQUE CHECK (length(content_sha256) = 32),
    uncompressed_bytes bigint NOT NULL CHECK (uncompressed_bytes > 0),
    row_count integer NOT NULL CHECK (row_count > 0),
    imported_at timestamptz NOT NULL DEFAULT now()
);
-- The newest import of a date: one step down this index.
CREATE INDEX apple_sales_reports_by_date ON apple_sales_reports (report_date, report_id);

CREATE TABLE apple_sales_report_rows (
    report_id bigint NOT NULL REFERENCES apple_sales_reports,
    -- 1-based line number in the file (the header is line 1).
    line integer NOT NULL CHECK (line > 1),
    sku text NOT NULL,
    title text,
    product_type text NOT NULL,
    -- Negative for refunds.
    units integer NOT NULL,
    customer_price_milli bigint NOT NULL,
    customer_currency text NOT NULL CHECK (customer_currency ~ '^[A-Z]{3}$'),
    country_code text NOT NULL CHECK (country_code ~ '^[A-Z]{2}$'),
    developer_proceeds_milli bigint NOT NULL,
    proceeds_currency text NOT NULL CHECK (proceeds_currency ~ '^[A-Z]{3}$'),
    apple_identifier text,
    parent_identifier text,
    promo_code text,
    app_version text,
    PRIMARY KEY (report_id, line)
);

CREATE TRIGGER apple_sales_reports_append_only BEFORE UPDATE OR DELETE ON apple_sales_reports
    FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER apple_sales_reports_no_truncate BEFORE TRUNCATE ON apple_sales_reports
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER apple_sales_report_rows_append_only BEFORE UPDATE OR DELETE ON apple_sales_report_rows
    FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER apple_sales_report_rows_no_truncate BEFORE TRUNCATE ON apple_sales_report_rows
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change();
ALTER TABLE apple_sales_reports ENABLE ALWAYS TRIGGER apple_sales_reports_append_only;
ALTER TABLE apple_sales_reports ENABLE ALWAYS TRIGGER apple_sales_reports_no_truncate;
ALTER TABLE apple_sales_report_rows ENABLE ALWAYS TRIGGER apple_sales_report_rows_append_only;
ALTER TABLE apple_sales_report_rows ENABLE ALWAYS TRIGGER apple_sales_report_rows_no_truncate;
