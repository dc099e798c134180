"""The geometry of one space: isotropy metrics, frequency bias, lexical overlap, the size sweep."""
