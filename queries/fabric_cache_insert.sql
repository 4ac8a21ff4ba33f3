-- Keep the snapshot taken at $seen_at ready to read, built from the sources $fingerprint names.
insert into fabric_cache values ($seen_at, $fingerprint, $body);
