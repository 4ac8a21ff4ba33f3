-- What one source could not use, one row per reason, with the first line as an example.
insert into source_issues (source_id, reason, lines, first_line_no, example)
select $source_id, unnest($reason), unnest($lines), unnest($first_line_no), unnest($example);
