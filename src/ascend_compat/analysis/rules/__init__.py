"""Rule tables (data) and the visitors that apply them."""
