insert into watch_list_runs (computed_at, took_s, since, until, readings, newest_read_at,
                             newest_source_id, settings, modules)
values ($computed_at, $took_s, $since, $until, $readings, $newest_read_at, $newest_source_id,
        $settings, $modules);
