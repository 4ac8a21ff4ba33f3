-- Which of the contents $sha256 (a list) are stored already, whatever their time, and with
-- which options. (list_contains plans as cheaply as find_source's equality; an IN-subquery
-- costs 40 % more.)
select sha256, source_id, options from sources where list_contains($sha256, sha256);
