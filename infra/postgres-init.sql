-- Our state DB, next to Prefect's own database (created by POSTGRES_DB).
CREATE DATABASE codex_memories;
