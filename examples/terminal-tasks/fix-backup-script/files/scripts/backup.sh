#!/bin/bash
# Copy every .txt file in /app/notes into /app/backup, keeping the names.
set -euo pipefail
SRC=/app/notes
DEST=/app/backup
mkdir -p "$DEST"
for f in "$SOURCE"/*.txt; do
    cp "$f" "$DEST/"
done
echo "backed up $(ls "$DEST" | wc -l) files"
