"""What people read: terminal tables and CSV (`tables`), the report files (`build`, `html`) and
the Prometheus textfile (`prometheus`)."""
