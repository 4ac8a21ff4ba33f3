-- Which of the contents $sha256 (a list) are stored already, whatever their time.
select distinct sha256 from sources where sha256 in (select unnest($sha256));
