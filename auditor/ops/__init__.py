"""Operations: the sweep (`sweep`, `switches`, `hosts`) and the nightly cron run (`nightly`, with
`lock`, `retention`, `runlog`, `progress`)."""
