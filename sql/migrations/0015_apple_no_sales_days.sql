-- shopledger: additive
-- A day Apple says had no sales (App Store Connect answers the day's Summary Sales Report with 404
-- "There were no sales for the date specified."), recorded as a report of its own with no rows, so
-- `reconcile apple` compares that day too: Apple's zero against the ledger's purchases, instead of
-- "no report imported" forever (issue 28; docs/finance.md). Only `apple sales fetch` records one; a
-- file without rows is still refused by the import. Older builds never write such a row and read
-- none of the relaxed columns as anything but text and numbers.

ALTER TABLE apple_sales_reports
    ADD COLUMN source text NOT NULL DEFAULT 'file' CHECK (source IN ('file', 'no_sales'));
ALTER TABLE apple_sales_reports DROP CONSTRAINT apple_sales_reports_format_version_check;
ALTER TABLE apple_sales_reports DROP CONSTRAINT apple_sales_reports_uncompressed_bytes_check;
ALTER TABLE apple_sales_reports DROP CONSTRAINT apple_sales_reports_row_count_check;
ALTER TABLE apple_sales_reports ADD CONSTRAINT apple_sales_reports_shape CHECK (
    CASE source
        WHEN 'file' THEN format_version ~ '^1_[0-9]$' AND uncompressed_bytes > 0 AND row_count > 0
        ELSE format_version = '' AND header = '' AND uncompressed_bytes = 0 AND row_count = 0
    END);
